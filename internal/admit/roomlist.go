package admit

import (
	"sort"
	"strings"
)

// RoomListEntry is one row of the rooms table (Cloudflare's "Manage Waiting
// Room" list): `room list` and the HTTP API's room list print the same rows.
type RoomListEntry struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Host string `json:"host"` // empty: every host
	// Status is the status API's (queueing, not_queueing, suspended,
	// event_prequeueing, deleted), or "unavailable" when the room did not
	// answer; Event names the event in effect, if any.
	Status               Status `json:"status"`
	Event                string `json:"event,omitempty"`
	ActiveUsers          int    `json:"active_users"`
	TotalActiveUsers     int    `json:"total_active_users"`
	QueuedUsers          int    `json:"queued_users"`
	EstimatedWaitMinutes int    `json:"estimated_wait_minutes"`
	// Error says why a room that did not answer is listed without figures.
	Error string `json:"error,omitempty"`
	// Live is the room's live view (the figures above are the minute
	// rollup's), absent for a room that did not answer.
	Live *Live `json:"live,omitempty"`
}

// StatusUnavailable marks a room listed whose workflow did not answer.
const StatusUnavailable Status = "unavailable"

// ListEntry is the row of a room's current snapshot.
func ListEntry(s *Snapshot) RoomListEntry {
	api := s.StatusAPI()
	path := s.Settings.Path
	if path == "" {
		path = "/"
	}
	return RoomListEntry{
		Name:                 s.Settings.Name,
		Path:                 path,
		Host:                 s.Settings.Host,
		Status:               api.Status,
		Event:                api.EventID,
		ActiveUsers:          api.EstimatedTotalActiveUsers,
		TotalActiveUsers:     s.Settings.TotalActiveUsers,
		QueuedUsers:          api.EstimatedQueuedUsers,
		EstimatedWaitMinutes: api.MaxEstimatedTimeMinutes,
	}
}

// SortRoomList orders rows by host, then path, then name, as a reader
// scans a site's rooms.
func SortRoomList(rows []RoomListEntry) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if c := strings.Compare(a.Host, b.Host); c != 0 {
			return c < 0
		}
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c < 0
		}
		return a.Name < b.Name
	})
}
