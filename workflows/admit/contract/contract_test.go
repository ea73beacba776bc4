package contract

import "testing"

// TestWireNames pins the strings running rooms, gates and starters depend
// on: the Go identifiers may be renamed, these values never change.
func TestWireNames(t *testing.T) {
	for _, c := range [][2]string{
		{TaskQueue, "admit"},
		{WorkflowTypeRoom, "Room"},
		{RoomWorkflowID("shop"), "room/shop"},
		{ReportSignal, "report"},
		{SettingsUpdate, "update-settings"},
		{AddEventUpdate, "add-event"},
		{CancelEventUpdate, "cancel-event"},
		{DeleteUpdate, "delete"},
		{RecreateUpdate, "recreate"},
		{SnapshotQuery, "snapshot"},
		{DescribeQuery, "describe"},
		{RoomKey.GetName(), "Room"},
		{ErrInvalidSettings, "InvalidSettings"},
		{ErrVersionConflict, "VersionConflict"},
		{ErrRoomDeleted, "RoomDeleted"},
		{ErrRoomNotDeleted, "RoomNotDeleted"},
		{ErrNoSuchEvent, "NoSuchEvent"},
	} {
		if got, want := c[0], c[1]; got != want {
			t.Errorf("wire name %q, want %q", got, want)
		}
	}
}

func TestRoomFromWorkflowID(t *testing.T) {
	if name, ok := RoomFromWorkflowID(RoomWorkflowID("shop")); !ok || name != "shop" {
		t.Fatalf("round trip: %q %v", name, ok)
	}
	for _, id := range []string{"room/", "migration/shop", "shop"} {
		if _, ok := RoomFromWorkflowID(id); ok {
			t.Fatalf("%q names a room", id)
		}
	}
}
