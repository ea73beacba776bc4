package console

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/internal/publish/schedules"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// publishAPI serves a library's publish request and the package-update
// schedule on the publish and schedule starters' own functions (pubclient,
// schedules).
type publishAPI struct {
	tc      client.Client
	libs    pubclient.Libraries
	timeout time.Duration
}

func (a publishAPI) routes() []route {
	return []route{
		{"GET /api/v1/libraries", a.libraries},
		{"GET /api/v1/libraries/{name}", a.library},
		{"POST /api/v1/libraries/{name}/publish", a.publish},
		{"GET /api/v1/schedule", a.schedule},
		{"PATCH /api/v1/schedule", a.patchSchedule},
	}
}

func (a publishAPI) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), a.timeout)
}

// publishRun is the answer to a publish request: the run it started (or
// the one already running under that ID, which it follows).
type publishRun struct {
	Name       string `json:"name"`
	Version    string `json:"version,omitempty"`
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
}

// publish starts what `publish --package NAME [--version V] --detach`
// starts: a check of the package's new versions, or one version.
func (a publishAPI) publish(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	name := r.PathValue("name")
	if !catalog.ValidName(name) {
		return 0, nil, nil, fail(http.StatusBadRequest, CodeInvalid, "name: %q is not a valid library name (letters, digits, '.', '_' and '-')", name)
	}
	body, berr := readBody(w, r)
	if berr != nil {
		return 0, nil, nil, berr
	}
	var req struct {
		Version string `json:"version"`
	}
	if len(body) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			return 0, nil, nil, err
		}
	}
	if req.Version != "" && !pubclient.ValidVersion(req.Version) {
		return 0, nil, nil, fail(http.StatusBadRequest, CodeInvalid, "version: %q is not a version (semver's characters, at most 128)", req.Version)
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	opts, workflowType, input := pubclient.Request(name, req.Version, nil)
	run, err := a.tc.ExecuteWorkflow(ctx, opts, workflowType, input)
	if err != nil {
		return 0, nil, nil, err
	}
	return http.StatusAccepted, publishRun{Name: name, Version: req.Version, WorkflowID: run.GetID(), RunID: run.GetRunID()}, nil, nil
}

func (a publishAPI) handle(ctx context.Context) client.ScheduleHandle {
	return a.tc.ScheduleClient().GetHandle(ctx, contract.UpdatesScheduleID)
}

func (a publishAPI) schedule(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	d, err := schedules.Describe(ctx, a.handle(ctx))
	if err != nil {
		return 0, nil, nil, scheduleError(err)
	}
	return http.StatusOK, d, nil, nil
}

// scheduleChange is PATCH /api/v1/schedule: what `schedule update`,
// `pause`/`unpause` (with a note) and `trigger` do, any of them at once.
type scheduleChange struct {
	Every   *string `json:"every"`
	Paused  *bool   `json:"paused"`
	Note    string  `json:"note"`
	Trigger bool    `json:"trigger"`
}

func (a publishAPI) patchSchedule(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	body, berr := readBody(w, r)
	if berr != nil {
		return 0, nil, nil, berr
	}
	var c scheduleChange
	if err := decodeStrict(body, &c); err != nil {
		return 0, nil, nil, err
	}
	var every time.Duration
	if c.Every != nil {
		var err error
		if every, err = time.ParseDuration(*c.Every); err != nil || every < schedules.MinEvery {
			return 0, nil, nil, fail(http.StatusBadRequest, CodeInvalid, "every: want a duration of at least %s (like \"30m\"), got %q", schedules.MinEvery, *c.Every)
		}
	}
	if c.Note != "" && c.Paused == nil {
		return 0, nil, nil, fail(http.StatusBadRequest, CodeInvalid, "note: is recorded with a pause or an unpause; give paused too")
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	h := a.handle(ctx)
	if _, err := h.Describe(ctx); err != nil {
		return 0, nil, nil, scheduleError(err)
	}
	if c.Every != nil || c.Paused != nil {
		var ev *time.Duration
		if c.Every != nil {
			ev = &every
		}
		var p *schedules.Pause
		if c.Paused != nil {
			p = &schedules.Pause{Paused: *c.Paused, Note: c.Note}
		}
		if err := schedules.Change(ctx, h, ev, p); err != nil {
			return 0, nil, nil, scheduleError(err)
		}
	}
	if c.Trigger {
		if err := h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP}); err != nil {
			return 0, nil, nil, scheduleError(err)
		}
	}
	// The schedule takes a change a moment after accepting it: answer
	// with the description once it shows the change (or the request's
	// time is up).
	for {
		d, err := schedules.Describe(ctx, h)
		if err != nil {
			return 0, nil, nil, scheduleError(err)
		}
		shows := (c.Paused == nil || d.Paused == *c.Paused) && (c.Every == nil || slices.Equal(d.Every, []string{every.String()}))
		if shows {
			return http.StatusOK, d, nil, nil
		}
		select {
		case <-ctx.Done():
			return http.StatusOK, d, nil, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// scheduleError: a schedule that does not exist is a 404 that says how
// to create it.
func scheduleError(err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fail(http.StatusNotFound, CodeNotFound, "schedule: not found (`go run ./starters/schedule create` or `make run` creates it)")
	}
	return err
}
