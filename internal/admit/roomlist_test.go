package admit

import (
	"reflect"
	"testing"
)

func TestListEntryFromSnapshot(t *testing.T) {
	s := &Snapshot{
		Settings:         Settings{Name: "shop", Host: "example.com", TotalActiveUsers: 200},
		Status:           StatusQueueing,
		ActiveUsers:      198,
		CurrentlyWaiting: 40,
		Estimate:         Estimate{Known: true, MaxMinutes: 2.2},
		Event:            &EventInfo{Name: "launch", Phase: EventActive},
	}
	got := ListEntry(s)
	want := RoomListEntry{Name: "shop", Path: "/", Host: "example.com", Status: StatusQueueing, Event: "launch",
		ActiveUsers: 198, TotalActiveUsers: 200, QueuedUsers: 40, EstimatedWaitMinutes: 3}
	if got != want {
		t.Fatalf("ListEntry = %+v\nwant %+v", got, want)
	}
	// Nobody waits: no wait to estimate, whatever the estimator knows.
	s.CurrentlyWaiting = 0
	if got := ListEntry(s); got.EstimatedWaitMinutes != 0 || got.QueuedUsers != 0 {
		t.Fatalf("no one queued: %+v", got)
	}
}

func TestSortRoomList(t *testing.T) {
	rows := []RoomListEntry{
		{Name: "b", Host: "shop.example", Path: "/"},
		{Name: "a", Host: "shop.example", Path: "/sale/"},
		{Name: "c", Host: "", Path: "/checkout/"},
		{Name: "d", Host: "shop.example", Path: "/"},
	}
	SortRoomList(rows)
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	if want := []string{"c", "b", "d", "a"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("order %v, want %v", names, want)
	}
}
