// Package contract is Admit's contract with Temporal: the task queue, the
// room workflow's ID, its signal, updates and queries, the search attribute,
// and every type that crosses the workflow boundary. Workers, starters, the
// gate and the deploy checks import it; it holds no worker or client code.
package contract

import (
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/product"
)

// TaskQueue is the queue of the room workflows (workers/admit).
const TaskQueue = "admit"

// WorkflowTypeRoom is the room workflow's registered name.
const WorkflowTypeRoom = "Room"

// RoomWorkflowID is the workflow ID of a room: one workflow per room name.
func RoomWorkflowID(name string) string { return "room/" + name }

// RoomFromWorkflowID is RoomWorkflowID's inverse: the room a workflow ID
// names, and whether it names one.
func RoomFromWorkflowID(id string) (string, bool) {
	name, ok := strings.CutPrefix(id, "room/")
	return name, ok && name != ""
}

// RoomKey is the search attribute holding the room's name, so the Web UI
// finds a room with Room="shop".
var RoomKey = temporal.NewSearchAttributeKeyKeyword("Room")

// SearchAttributes lists the attributes Admit needs registered.
var SearchAttributes = []temporal.SearchAttributeKey{RoomKey}

// Product is what shared tooling reads: the queue to run a pool for and the
// search attribute to register.
var Product = product.Contract{Name: "admit", TaskQueues: []string{TaskQueue}, SearchAttributes: SearchAttributes}

// The room's signal: gates report their counts with it (signal-with-start,
// so a gate can create a room from a file).
const ReportSignal = "report"

// The room's updates. Each has a validator: an invalid request is refused
// before it is written to history and changes nothing.
const (
	SettingsUpdate    = "update-settings" // SettingsChange → Change
	AddEventUpdate    = "add-event"       // admit.Event → Change
	CancelEventUpdate = "cancel-event"    // event name → Change
	DeleteUpdate      = "delete"          // no argument → Change
	RecreateUpdate    = "recreate"        // admit.Settings → Change; only on a deleted room
)

// The room's queries.
const (
	SnapshotQuery = "snapshot" // → admit.Snapshot: what gates decide on
	DescribeQuery = "describe" // → Description: settings, events, recent minutes
)

// Error types of refused updates (temporal.ApplicationError.Type()). An
// InvalidSettings error carries the problems ([]admit.FieldError) as details.
const (
	ErrInvalidSettings = "InvalidSettings"
	ErrVersionConflict = "VersionConflict"
	ErrRoomDeleted     = "RoomDeleted"
	ErrRoomNotDeleted  = "RoomNotDeleted"
	ErrNoSuchEvent     = "NoSuchEvent"
	// ErrRoomStateTooLarge fails a room whose state, trimmed, is still
	// over MaxContinueBytes: it cannot continue as new.
	ErrRoomStateTooLarge = "RoomStateTooLarge"
)

// RoomInput starts a room, or continues one (State set) after
// continue-as-new.
type RoomInput struct {
	Settings admit.Settings `json:"settings"`
	// MinuteSeconds is the room's minute: 0 means 60 (production); tests
	// shorten it.
	MinuteSeconds int `json:"minuteSeconds,omitempty"`
	// HistoryBudget is how many history events a run may have before it
	// continues as new; 0 means DefaultHistoryBudget.
	HistoryBudget int `json:"historyBudget,omitempty"`

	State *RoomState `json:"state,omitempty"`
}

// MaxContinueBytes is the most a room's continue-as-new input may encode to
// (Temporal refuses inputs above 2 MiB and terminates the workflow); a
// room trims its state to stay under it (admit.Room.Trim).
const MaxContinueBytes = 1 << 20

// DefaultHistoryBudget keeps a run's history far below Temporal's limits
// (about 10 MB at the largest reports).
const DefaultHistoryBudget = 10000

// RoomState is what a room carries across continue-as-new.
type RoomState struct {
	Room      admit.Room `json:"room"`
	Deleted   bool       `json:"deleted,omitempty"`
	DeletedAt time.Time  `json:"deletedAt,omitzero"`
	Runs      int        `json:"runs"` // runs before this one
	Stats     RoomStats  `json:"stats"`
}

// RoomStats count what the room received, for the describe query.
type RoomStats struct {
	Reports         int    `json:"reports"`
	ReportsRefused  int    `json:"reportsRefused"` // invalid, or for a deleted room
	LastRefusal     string `json:"lastRefusal,omitempty"`
	SettingsChanges int    `json:"settingsChanges"`
	// ReportsUndecodable are report signals whose payload is not a report
	// (dropped).
	ReportsUndecodable int `json:"reportsUndecodable,omitempty"`
}

// SettingsChange replaces a room's settings. IfVersion, when not 0, must be
// the settings version they were read at (optimistic concurrency: a change
// made meanwhile by someone else is not overwritten).
type SettingsChange struct {
	Settings  admit.Settings `json:"settings"`
	IfVersion int64          `json:"ifVersion,omitempty"`
}

// Change is what an accepted update answers.
type Change struct {
	SettingsVersion int64          `json:"settingsVersion"`
	Deleted         bool           `json:"deleted,omitempty"`
	Snapshot        admit.Snapshot `json:"snapshot"`
}

// Description answers DescribeQuery: everything about a room.
type Description struct {
	Settings        admit.Settings        `json:"settings"` // as configured, with custom_page_html
	SettingsVersion int64                 `json:"settingsVersion"`
	Events          []admit.Event         `json:"events"`
	MinuteSeconds   int                   `json:"minuteSeconds"`
	Created         time.Time             `json:"created"`
	Deleted         bool                  `json:"deleted,omitempty"`
	DeletedAt       time.Time             `json:"deletedAt,omitzero"`
	Snapshot        admit.Snapshot        `json:"snapshot"`
	Recent          []admit.MinuteSummary `json:"recent"`
	// Ledger is what the gates reported, minute by minute: the closed
	// minutes' totals (with how many reports each folded) and the newest
	// report of each gate for the minutes still open.
	Ledger admit.Ledger `json:"ledger"`
	Runs   int          `json:"runs"`
	Stats  RoomStats    `json:"stats"`
}
