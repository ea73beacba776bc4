// Package admit holds the room workflow: one long-lived workflow per
// waiting room (ID room/<name>) that keeps the room's settings and events,
// takes the gates' reports by signal, rolls them up into a new snapshot at
// every minute boundary (a durable timer) and answers the gates' queries.
// All the arithmetic is the engine's (internal/admit); this is the durable
// shell around it: no I/O, no wall clock, no randomness, no map ranging.
package admit

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// Register registers the room workflow under its contract name.
func Register(w worker.WorkflowRegistry) {
	w.RegisterWorkflowWithOptions(Room, workflow.RegisterOptions{Name: contract.WorkflowTypeRoom})
}

// Room runs one waiting room until it is deleted — and then stays, deleted,
// so that gates signalling it cannot bring it back (signal-with-start
// delivers to the running tombstone, which ignores them).
func Room(ctx workflow.Context, in contract.RoomInput) error {
	// Rooms from this version on refuse a custom page with a partial (or
	// sections too deep, or names too long) when they apply a change, as
	// their validators do (engine.RevStrictPages).
	strictPages := newBranch(workflow.GetVersion(ctx, "pages-read-no-files", workflow.DefaultVersion, 1))
	r, err := newRoom(ctx, in, strictPages)
	if err != nil {
		return err
	}
	if err := r.register(ctx); err != nil {
		return err
	}
	r.rev = runRevision(ctx, strictPages)
	r.Room.Rev = r.rev
	return r.run(ctx)
}

type room struct {
	contract.RoomState
	budget  int
	changed workflow.Channel // update handlers wake the main loop
	// rev is the run's revision, from its markers: the engine's rules
	// (Room.Rev) and the workflow's own (reports read with ReceiveAsync
	// only from engine.RevDropUndecodable on).
	rev engine.Revision
}

func newRoom(ctx workflow.Context, in contract.RoomInput, strictPages bool) (*room, error) {
	r := &room{budget: in.HistoryBudget, changed: workflow.NewBufferedChannel(ctx, 1)}
	if r.budget <= 0 {
		r.budget = contract.DefaultHistoryBudget
	}
	if in.State != nil {
		r.RoomState = *in.State
		return r, nil
	}
	// Rooms started from this version on refuse route paths no request can
	// match; rooms recorded before replay with the paths they started with.
	// Asked only as a room starts, it is no part of the run's revision.
	if newBranch(workflow.GetVersion(ctx, "matchable-route-paths", workflow.DefaultVersion, 1)) {
		if err := in.Settings.WithDefaults().Validate(); err != nil {
			return nil, refusal(err)
		}
	}
	// The revision is known once every marker is read (runRevision); the
	// first snapshot of a new room is the same at every one, and only its
	// checks of the page depend on it.
	rev := engine.RevStrictPages - 1
	if strictPages {
		rev = engine.RevCurrent
	}
	rm, err := engine.NewRoomAt(in.Settings, in.MinuteSeconds, workflow.Now(ctx), rev)
	if err != nil {
		return nil, refusal(err)
	}
	r.Room = *rm
	return r, nil
}

func (r *room) register(ctx workflow.Context) error {
	name := r.Room.Settings.Name
	if v, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(contract.RoomKey); !ok || v != name {
		if err := workflow.UpsertTypedSearchAttributes(ctx, contract.RoomKey.ValueSet(name)); err != nil {
			return err
		}
	}
	r.showDetails(ctx)
	if err := workflow.SetQueryHandler(ctx, contract.SnapshotQuery, r.snapshot); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, contract.DescribeQuery, r.describe); err != nil {
		return err
	}
	updates := []struct {
		name      string
		handler   any
		validator any
	}{
		{contract.SettingsUpdate, r.updateSettings, r.validateSettings},
		{contract.AddEventUpdate, r.addEvent, r.validateEvent},
		{contract.CancelEventUpdate, r.cancelEvent, r.validateCancel},
		{contract.DeleteUpdate, r.delete, func(workflow.Context) error { return nil }},
		{contract.RecreateUpdate, r.recreate, r.validateRecreate},
	}
	for _, u := range updates {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, u.name, u.handler, workflow.UpdateHandlerOptions{Validator: u.validator}); err != nil {
			return err
		}
	}
	return nil
}

// run is the main loop: a durable timer for the room's next wake-up (the
// next minute's rollup, or an event changing phase), the gates' reports, and
// wake-ups from update handlers; it continues as new before the history
// grows large.
func (r *room) run(ctx workflow.Context) error {
	reports := workflow.GetSignalChannel(ctx, contract.ReportSignal)
	var (
		timer       workflow.Future
		timerAt     time.Time
		cancelTimer workflow.CancelFunc
	)
	for {
		if ctx.Err() != nil {
			return ctx.Err() // cancelled: the room ends (delete keeps it, deleted)
		}
		info := workflow.GetInfo(ctx)
		if info.GetCurrentHistoryLength() > r.budget || info.GetContinueAsNewSuggested() {
			return r.continueAsNew(ctx, reports)
		}
		sel := workflow.NewSelector(ctx)
		if !r.Deleted {
			if want := r.Room.NextWake(workflow.Now(ctx)); timer == nil || !want.Equal(timerAt) {
				if cancelTimer != nil {
					cancelTimer()
				}
				var tctx workflow.Context
				tctx, cancelTimer = workflow.WithCancel(ctx)
				timer, timerAt = workflow.NewTimer(tctx, max(want.Sub(workflow.Now(ctx)), 0)), want
			}
			sel.AddFuture(timer, func(f workflow.Future) {
				timer = nil
				if f.Get(ctx, nil) == nil {
					// Reports that reached the room with the timer count
					// in the snapshot it publishes.
					r.drain(ctx, reports)
					r.advance(ctx)
				}
			})
		}
		sel.AddReceive(reports, func(c workflow.ReceiveChannel, _ bool) {
			if r.rev < engine.RevDropUndecodable {
				var rep engine.Report
				c.Receive(ctx, &rep)
				r.report(ctx, rep)
			}
			r.drain(ctx, c)
			if r.Room.Rev >= engine.RevAwaitFinals && !r.Deleted {
				r.advance(ctx) // the last final report a due snapshot waited for
			}
		})
		sel.AddReceive(r.changed, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.Select(ctx)
	}
}

// continueAsNew carries the state (and any report still queued) to a new
// run, once every update handler has finished.
func (r *room) continueAsNew(ctx workflow.Context, reports workflow.ReceiveChannel) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	r.drain(ctx, reports)
	st := r.RoomState
	st.Runs++
	in, size, err := ContinueInput(st, r.budget)
	if err != nil {
		return err
	}
	if size > contract.MaxContinueBytes {
		// Temporal refuses such an input and terminates the run: the room
		// would end with no word of why. It fails instead, saying so (gates
		// hold a room that ended so from its last snapshot).
		if workflow.GetVersion(ctx, "fail-oversized-continue", workflow.DefaultVersion, 1) >= 1 {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"room %s cannot continue as new: its state takes %d bytes trimmed, over the %d a run may carry to the next; the room stops here (gates decide on its last snapshot); create it again to start it afresh",
				r.Room.Settings.Name, size, contract.MaxContinueBytes), contract.ErrRoomStateTooLarge, nil)
		}
		workflow.GetLogger(ctx).Error("room state too large to continue as new", "bytes", size, "limit", contract.MaxContinueBytes)
	}
	return workflow.NewContinueAsNewError(ctx, Room, in)
}

// ContinueInput is the input a room continues as new with, and its size:
// measured as it will be sent, and the state trimmed (engine.Room.Trim)
// until it is under contract.MaxContinueBytes, or nothing more can go.
func ContinueInput(st contract.RoomState, budget int) (contract.RoomInput, int, error) {
	// The settings travel in the state; the copy beside it goes without
	// its page, which would count twice against the input's size.
	settings := st.Room.Settings
	settings.CustomPageHTML = ""
	in := contract.RoomInput{Settings: settings, MinuteSeconds: st.Room.MinuteSeconds, HistoryBudget: budget, State: &st}
	// Trimming writes to these in place; the caller's stay whole.
	l := &st.Room.Ledger
	l.Open, l.Closed, st.Room.Recent = slices.Clone(l.Open), slices.Clone(l.Closed), slices.Clone(st.Room.Recent)
	for step := 0; ; step++ {
		size, err := InputSize(in)
		if err != nil || size <= contract.MaxContinueBytes || !st.Room.Trim(step) {
			return in, size, err
		}
	}
}

// InputSize is how many bytes a room's input takes as a payload.
func InputSize(in contract.RoomInput) (int, error) {
	p, err := converter.GetDefaultDataConverter().ToPayload(in)
	if err != nil {
		return 0, err
	}
	return proto.Size(p), nil
}

// drain takes every report already received. Each is decoded into a
// fresh value: decoding into the last one would keep the fields a report
// leaves out (zero counts are omitted) at the previous report's values.
// ReceiveAsync skips the signals that do not decode: what it took beyond
// the report it returns is counted.
func (r *room) drain(ctx workflow.Context, reports workflow.ReceiveChannel) {
	for {
		var rep engine.Report
		queued := reports.Len()
		ok := reports.ReceiveAsync(&rep)
		skipped := queued - reports.Len()
		if ok {
			skipped--
		}
		r.Stats.ReportsUndecodable += skipped
		if !ok {
			return
		}
		r.report(ctx, rep)
	}
}

func (r *room) advance(ctx workflow.Context) {
	if _, published := r.Room.Advance(workflow.Now(ctx)); published {
		r.showDetails(ctx)
	}
}

func (r *room) report(ctx workflow.Context, rep engine.Report) {
	if r.Deleted {
		r.refuse("the room is deleted")
		return
	}
	if err := r.Room.AddReport(rep, workflow.Now(ctx)); err != nil {
		r.refuse(err.Error())
		return
	}
	r.Stats.Reports++
}

func (r *room) refuse(reason string) {
	r.Stats.ReportsRefused++
	if len(reason) > 200 {
		reason = reason[:200]
	}
	r.Stats.LastRefusal = reason
}

func (r *room) wake() { r.changed.SendAsync(struct{}{}) }

// Queries.

func (r *room) snapshot() (engine.Snapshot, error) {
	if r.Deleted {
		return engine.Snapshot{Room: r.Room.Settings.Name, Status: engine.StatusDeleted, Seq: r.Room.Seq + 1,
			PublishedAt: r.DeletedAt, MinuteSeconds: r.Room.MinuteSeconds, SettingsVersion: r.Room.SettingsVersion}, nil
	}
	return *r.Room.Snapshot, nil
}

func (r *room) describe() (contract.Description, error) {
	snap, _ := r.snapshot()
	return contract.Description{
		Settings: r.Room.Settings, SettingsVersion: r.Room.SettingsVersion, Events: r.Room.Events,
		MinuteSeconds: r.Room.MinuteSeconds, Created: r.Room.Created, Deleted: r.Deleted, DeletedAt: r.DeletedAt,
		Snapshot: snap, Recent: r.Room.Recent, Ledger: r.Room.Ledger, Runs: r.Runs, Stats: r.Stats,
	}, nil
}

// Updates: validators refuse (nothing is written to history), handlers
// apply and republish.

func (r *room) validateSettings(ctx workflow.Context, ch contract.SettingsChange) error {
	if r.Deleted {
		return errDeleted()
	}
	if err := r.Room.CheckSettings(ch.Settings, ch.IfVersion); err != nil {
		return refusal(err)
	}
	// Only validators check the pages' total: they never replay, so rooms
	// that took more before the bound still replay as they ran.
	return refusal(r.Room.CheckPages(&ch.Settings, nil))
}

func (r *room) updateSettings(ctx workflow.Context, ch contract.SettingsChange) (contract.Change, error) {
	if r.Deleted {
		return contract.Change{}, errDeleted()
	}
	if _, err := r.Room.SetSettings(ch.Settings, ch.IfVersion, workflow.Now(ctx)); err != nil {
		return contract.Change{}, refusal(err)
	}
	r.Stats.SettingsChanges++
	return r.changedNow(ctx), nil
}

func (r *room) validateEvent(ctx workflow.Context, e engine.Event) error {
	if r.Deleted {
		return errDeleted()
	}
	if err := r.Room.CheckEvent(e, workflow.Now(ctx)); err != nil {
		return refusal(err)
	}
	return refusal(r.Room.CheckPages(nil, &e))
}

func (r *room) addEvent(ctx workflow.Context, e engine.Event) (contract.Change, error) {
	if r.Deleted {
		return contract.Change{}, errDeleted()
	}
	if _, err := r.Room.AddEvent(e, workflow.Now(ctx)); err != nil {
		return contract.Change{}, refusal(err)
	}
	return r.changedNow(ctx), nil
}

func (r *room) validateCancel(ctx workflow.Context, name string) error {
	if r.Deleted {
		return errDeleted()
	}
	if err := r.Room.CheckCancel(name); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrNoSuchEvent, nil)
	}
	return nil
}

func (r *room) cancelEvent(ctx workflow.Context, name string) (contract.Change, error) {
	if r.Deleted {
		return contract.Change{}, errDeleted()
	}
	if _, err := r.Room.CancelEvent(name, workflow.Now(ctx)); err != nil {
		return contract.Change{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrNoSuchEvent, nil)
	}
	return r.changedNow(ctx), nil
}

func (r *room) delete(ctx workflow.Context) (contract.Change, error) {
	if !r.Deleted {
		r.Deleted, r.DeletedAt = true, workflow.Now(ctx)
	}
	return r.changedNow(ctx), nil
}

func (r *room) validateRecreate(ctx workflow.Context, s engine.Settings) error {
	if !r.Deleted {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("room %q exists; change it with update", r.Room.Settings.Name), contract.ErrRoomNotDeleted, nil)
	}
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return refusal(err)
	}
	if s.Name != r.Room.Settings.Name {
		return refusal(&engine.InvalidError{Problems: []*engine.FieldError{{Field: "name", Reason: fmt.Sprintf("this workflow is room %q", r.Room.Settings.Name)}}})
	}
	return nil
}

func (r *room) recreate(ctx workflow.Context, s engine.Settings) (contract.Change, error) {
	if !r.Deleted {
		return contract.Change{}, r.validateRecreate(ctx, s)
	}
	// Recreate checks the settings and the name as validateRecreate does,
	// but pages as the room's revision says (engine.RevStrictPages).
	if err := r.Room.Recreate(s, workflow.Now(ctx)); err != nil {
		return contract.Change{}, refusal(err)
	}
	// A recreated room keeps its revision. Before this version it started
	// with none of the rules its fields once held (no final reports
	// awaited, no bound) until the next run: RevInitial, as far as its
	// history can tell.
	if !newBranch(workflow.GetVersion(ctx, "keep-revision-on-recreate", workflow.DefaultVersion, 1)) {
		r.Room.Rev = engine.RevInitial
	}
	r.Deleted, r.DeletedAt = false, time.Time{}
	r.Stats = contract.RoomStats{}
	return r.changedNow(ctx), nil
}

func (r *room) changedNow(ctx workflow.Context) contract.Change {
	r.showDetails(ctx)
	r.wake()
	snap, _ := r.snapshot()
	return contract.Change{SettingsVersion: r.Room.SettingsVersion, Deleted: r.Deleted, Snapshot: snap}
}

// showDetails puts the live status in the Web UI's current details.
func (r *room) showDetails(ctx workflow.Context) {
	s := r.Room.Snapshot
	if r.Deleted {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("**deleted** at %s; reports are ignored", r.DeletedAt.Format(time.RFC3339)))
		return
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** — %d/%d active, %d slots in the minute of %s, %d waiting (%s), %d/min let in · settings v%d",
		s.Status, s.ActiveUsers, s.Settings.TotalActiveUsers, s.SlotsAvailable, s.Minute.Format("15:04"), s.CurrentlyWaiting,
		s.Settings.QueueingMethod, int(s.LetInPerMinute+0.5), s.SettingsVersion))
}

func errDeleted() error {
	return temporal.NewNonRetryableApplicationError("the room is deleted; create it again with create", contract.ErrRoomDeleted, nil)
}

// refusal turns an engine error into the error an update is refused with:
// invalid settings carry their field problems as details.
func refusal(err error) error {
	if err == nil {
		return nil
	}
	var inv *engine.InvalidError
	switch {
	case errors.As(err, &inv):
		problems := make([]engine.FieldError, len(inv.Problems))
		for i, p := range inv.Problems {
			problems[i] = *p
		}
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrInvalidSettings, nil, problems)
	case errors.Is(err, engine.ErrVersion):
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrVersionConflict, nil)
	default:
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrInvalidSettings, nil)
	}
}
