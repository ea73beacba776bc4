// Package roomclient talks to room workflows: create, read, change and
// delete rooms, and send them gate reports. The room starter, the gate and
// the tests share it, so every caller maps the workflow's refusals to the
// same errors.
package roomclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// Errors the callers tell apart (besides *admit.InvalidError, for invalid
// settings, with every field's problem).
var (
	ErrNotFound = errors.New("no such room")
	ErrExists   = errors.New("the room exists; change it with update")
	ErrDeleted  = errors.New("the room is deleted; create it again with create")
	ErrConflict = errors.New("the room's settings changed meanwhile; try again")
	// ErrNoSuchEvent matches (errors.Is) a cancel of an event the room does
	// not have; the error's text is the room's own message.
	ErrNoSuchEvent = errors.New("no such event")
)

// noSuchEvent keeps the room's message while matching ErrNoSuchEvent.
type noSuchEvent struct{ msg string }

func (e noSuchEvent) Error() string        { return e.msg }
func (e noSuchEvent) Is(target error) bool { return target == ErrNoSuchEvent }

// Client wraps a Temporal client, and the Redis the rooms' live views are
// read from (nil: they are shown unavailable).
type Client struct {
	C          client.Client
	LiveSource *LiveSource
}

// CreateOptions are the creation-only parameters of a room.
type CreateOptions struct {
	MinuteSeconds int // 0: 60 (production)
	HistoryBudget int // 0: the default
}

// StartOptions are the workflow options a room starts with, also for a gate
// creating one by signal-with-start: the ID, the queue, the Room search
// attribute, a summary, and reuse policies that refuse a second room of the
// same name while keeping a deleted room deleted (its workflow keeps
// running as a tombstone).
func StartOptions(s admit.Settings) client.StartWorkflowOptions {
	s = s.WithDefaults()
	where := s.Host + s.Path
	if s.Host == "" {
		where = "every host, " + s.Path
	}
	return client.StartWorkflowOptions{
		ID:                       contract.RoomWorkflowID(s.Name),
		TaskQueue:                contract.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// Without this, ExecuteWorkflow quietly returns the running room.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    temporal.NewSearchAttributes(contract.RoomKey.ValueSet(s.Name)),
		StaticSummary:                            fmt.Sprintf("Waiting room %s (%s): %d active users, %d new a minute", s.Name, where, s.TotalActiveUsers, s.NewUsersPerMinute),
		StaticDetails:                            "Rolls the gates' reports up into one snapshot a minute. Query `snapshot` for what gates decide on, `describe` for settings and events.",
	}
}

// Create starts a room. On the name of a deleted room it creates the room
// again (recreated is true); on a room that exists it fails with ErrExists.
func (c Client) Create(ctx context.Context, s admit.Settings, o CreateOptions) (recreated bool, err error) {
	s = s.WithDefaults()
	if err := s.ValidateForMinute(o.MinuteSeconds); err != nil {
		return false, err
	}
	_, err = c.C.ExecuteWorkflow(ctx, StartOptions(s), contract.WorkflowTypeRoom,
		contract.RoomInput{Settings: s, MinuteSeconds: o.MinuteSeconds, HistoryBudget: o.HistoryBudget})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if !errors.As(err, &started) {
		return false, err
	}
	d, derr := c.Describe(ctx, s.Name)
	if derr != nil {
		return false, derr
	}
	if !d.Deleted {
		return false, ErrExists
	}
	_, err = c.update(ctx, s.Name, contract.RecreateUpdate, s)
	return err == nil, err
}

// Describe returns everything about a room.
func (c Client) Describe(ctx context.Context, name string) (contract.Description, error) {
	var d contract.Description
	return d, c.query(ctx, name, contract.DescribeQuery, &d)
}

// Snapshot returns the room's current snapshot.
func (c Client) Snapshot(ctx context.Context, name string) (admit.Snapshot, error) {
	var s admit.Snapshot
	return s, c.query(ctx, name, contract.SnapshotQuery, &s)
}

func (c Client) query(ctx context.Context, name, query string, out any) error {
	v, err := c.C.QueryWorkflow(ctx, contract.RoomWorkflowID(name), "", query)
	if err != nil {
		return mapError(err)
	}
	return v.Get(out)
}

// Update replaces a room's settings; ifVersion 0 overwrites whatever is
// there.
func (c Client) Update(ctx context.Context, s admit.Settings, ifVersion int64) (contract.Change, error) {
	return c.update(ctx, s.Name, contract.SettingsUpdate, contract.SettingsChange{Settings: s, IfVersion: ifVersion})
}

// Modify reads a room's settings, changes them with fn and writes them back
// if nobody changed them meanwhile (it retries a few times if someone did).
func (c Client) Modify(ctx context.Context, name string, fn func(*admit.Settings) error) (contract.Change, error) {
	for attempt := 0; ; attempt++ {
		d, err := c.Describe(ctx, name)
		if err != nil {
			return contract.Change{}, err
		}
		if d.Deleted {
			return contract.Change{}, ErrDeleted
		}
		s := d.Settings
		if err := fn(&s); err != nil {
			return contract.Change{}, err
		}
		ch, err := c.Update(ctx, s, d.SettingsVersion)
		if errors.Is(err, ErrConflict) && attempt < 3 {
			continue
		}
		return ch, err
	}
}

// Delete deletes a room. Gates see it deleted; its workflow stays, as a
// tombstone that ignores reports, so only create brings the room back.
func (c Client) Delete(ctx context.Context, name string) (contract.Change, error) {
	return c.update(ctx, name, contract.DeleteUpdate)
}

// AddEvent schedules an event.
func (c Client) AddEvent(ctx context.Context, room string, e admit.Event) (contract.Change, error) {
	return c.update(ctx, room, contract.AddEventUpdate, e)
}

// CancelEvent removes an event.
func (c Client) CancelEvent(ctx context.Context, room, event string) (contract.Change, error) {
	return c.update(ctx, room, contract.CancelEventUpdate, event)
}

func (c Client) update(ctx context.Context, name, update string, args ...any) (contract.Change, error) {
	h, err := c.C.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: contract.RoomWorkflowID(name), UpdateName: update, Args: args, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return contract.Change{}, mapError(err)
	}
	var out contract.Change
	if err := h.Get(ctx, &out); err != nil {
		return contract.Change{}, mapError(err)
	}
	return out, nil
}

// Report sends a gate's report. With create set, a room that does not exist
// yet is created with those settings (signal-with-start); a deleted room
// stays deleted either way.
func (c Client) Report(ctx context.Context, r admit.Report, create *admit.Settings) error {
	if create == nil {
		return mapError(c.C.SignalWorkflow(ctx, contract.RoomWorkflowID(r.Room), "", contract.ReportSignal, r))
	}
	opts := StartOptions(*create)
	opts.WorkflowIDConflictPolicy = enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	_, err := c.C.SignalWithStartWorkflow(ctx, opts.ID, contract.ReportSignal, r, opts, contract.WorkflowTypeRoom,
		contract.RoomInput{Settings: create.WithDefaults()})
	return mapError(err)
}

// mapError turns what Temporal answers into the errors above.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return ErrNotFound
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		switch app.Type() {
		case contract.ErrInvalidSettings:
			inv := &admit.InvalidError{}
			var problems []admit.FieldError
			if app.HasDetails() && app.Details(&problems) == nil {
				for i := range problems {
					inv.Problems = append(inv.Problems, &problems[i])
				}
			}
			if len(inv.Problems) == 0 {
				inv.Problems = []*admit.FieldError{{Field: "(settings)", Reason: strings.TrimSpace(app.Message())}}
			}
			return inv
		case contract.ErrVersionConflict:
			return ErrConflict
		case contract.ErrRoomDeleted:
			return ErrDeleted
		case contract.ErrRoomNotDeleted:
			return ErrExists
		case contract.ErrNoSuchEvent:
			return noSuchEvent{app.Message()}
		}
	}
	return err
}

// Unavailable reports whether err means Temporal could not be reached.
func Unavailable(err error) bool {
	var un *serviceerror.Unavailable
	var de *serviceerror.DeadlineExceeded
	return errors.As(err, &un) || errors.As(err, &de) || errors.Is(err, context.DeadlineExceeded)
}
