package onrequest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// watch is one version's publish as this process follows it: one start and
// one wait for its result, however many requests ask meanwhile. A failed
// or skipped outcome is kept until memoUntil, so requests for a version
// that cannot publish now do not start it again and again.
type watch struct {
	done      chan struct{} // closed once answer is set
	answer    Answer
	memoUntil time.Time // zero: forgotten as soon as it is done
}

// watches are the versions being watched, by name@version.
type watches struct {
	mu sync.Mutex
	m  map[string]*watch
}

func newWatches() *watches { return &watches{m: map[string]*watch{}} }

// maxMemos is how many ended watches are kept before expired ones are
// swept.
const maxMemos = 1024

// find returns the watch of key still in progress or remembered at now.
func (ws *watches) find(key string, now time.Time) *watch {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.live(key, now)
}

func (ws *watches) live(key string, now time.Time) *watch {
	w := ws.m[key]
	if w == nil {
		return nil
	}
	select {
	case <-w.done:
		if !now.Before(w.memoUntil) {
			delete(ws.m, key)
			return nil
		}
	default:
	}
	return w
}

// startOrJoin returns the watch of key, creating it (and calling start
// with it) when there is none and take allows a start for library; when it
// does not, the watch is nil and retryAfter says when it may.
func (ws *watches) startOrJoin(key string, now time.Time, take func(string) (bool, time.Duration), library string, start func(*watch)) (w *watch, retryAfter time.Duration) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.live(key, now); w != nil {
		return w, 0
	}
	ok, retryAfter := take(library)
	if !ok {
		return nil, retryAfter
	}
	if len(ws.m) >= maxMemos {
		for k := range ws.m {
			ws.live(k, now) // drops what has expired
		}
	}
	w = &watch{done: make(chan struct{})}
	ws.m[key] = w
	start(w)
	return w, 0
}

// end sets the watch's answer, forgets it unless it is to be remembered,
// and wakes its requests.
func (ws *watches) end(key string, w *watch, a Answer, memoUntil time.Time) {
	ws.mu.Lock()
	w.answer, w.memoUntil = a, memoUntil
	if memoUntil.IsZero() && ws.m[key] == w {
		delete(ws.m, key)
	}
	ws.mu.Unlock()
	close(w.done)
}

// watch starts name@version's PublishVersion, or joins the run already
// under its ID, and waits for its result. The start must be accepted by
// startBy (the first request's deadline): a Temporal that does not answer
// holds no request past its wait.
func (p *Publisher) watch(w *watch, name, version string, dist registry.Dist, startBy time.Time) {
	key := name + "@" + version
	log := p.cfg.Logger.With("package", name, "version", version)
	now := p.cfg.Now
	startCtx, cancel := context.WithDeadline(context.Background(), startBy)
	run, err := p.start(startCtx, name, version, dist)
	cancel()
	if err != nil {
		log.Warn("a version asked for could not be started", "error", err)
		p.watches.end(key, w, Answer{Kind: NotReady, RetryAfter: p.cfg.RetryAfter, Reason: "publishing could not be started; try again shortly"}, time.Time{})
		return
	}
	if run == nil { // published already; the caller's document was old
		p.published(name, version)
		p.watches.end(key, w, Answer{Kind: Published}, time.Time{})
		return
	}
	log.Info("publishing a version on its first request", "workflow", run.GetID(), "run", run.GetRunID())
	waitCtx, cancel := context.WithTimeout(context.Background(), p.cfg.WatchTimeout)
	defer cancel()
	var out contract.PublishOutput
	err = run.Get(waitCtx, &out)
	var failed *temporal.WorkflowExecutionError
	switch {
	case err == nil && out.SkipReason != "":
		p.watches.end(key, w, Answer{Kind: Refused, Reason: "skipped: " + out.SkipReason}, now().Add(p.cfg.ListingTTL))
	case err == nil:
		p.published(name, version)
		p.watches.end(key, w, Answer{Kind: Published}, time.Time{})
	case errors.As(err, &failed):
		log.Warn("a version asked for failed to publish", "error", err)
		p.watches.end(key, w, Answer{Kind: NotReady, RetryAfter: p.cfg.ListingTTL, Reason: "publishing this version failed; it is tried again later"}, now().Add(p.cfg.ListingTTL))
	default: // still running after WatchTimeout, or Temporal unreachable
		log.Warn("stopped watching a version asked for", "error", err)
		p.watches.end(key, w, Answer{Kind: NotReady, RetryAfter: p.cfg.RetryAfter, Reason: fmt.Sprintf("%s@%s is being published; try again shortly", name, version)}, time.Time{})
	}
}

func (p *Publisher) published(name, version string) {
	if p.onPublished != nil {
		p.onPublished(name, version)
	}
}

// start starts the version's PublishVersion as the publish starter does
// (pubclient.Request), joining a run already under its ID. A run that
// ended well is not started again: if the package document lists the
// version, run is nil (published); if not (the run skipped the version
// and the fileMap has changed since, or an audit withdrew it), a new run
// starts, as the update check would start one.
func (p *Publisher) start(ctx context.Context, name, version string, dist registry.Dist) (client.WorkflowRun, error) {
	opts, workflowType, in := pubclient.Request(name, version, nil)
	input := in.(contract.PublishInput)
	if dist.Tarball != "" {
		d := contract.Dist(dist)
		input.Dist = &d
	}
	opts.StaticSummary += ", asked for at the edge"
	opts.WorkflowIDReusePolicy = enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY
	opts.WorkflowExecutionErrorWhenAlreadyStarted = true
	run, err := p.cfg.Temporal.ExecuteWorkflow(ctx, opts, workflowType, input)
	var ended *serviceerror.WorkflowExecutionAlreadyStarted
	if !errors.As(err, &ended) {
		return run, err
	}
	listed, err := p.listed(ctx, name, version)
	if err != nil || listed {
		return nil, err
	}
	opts.WorkflowIDReusePolicy = contract.PublishIDReusePolicy
	opts.WorkflowExecutionErrorWhenAlreadyStarted = false
	return p.cfg.Temporal.ExecuteWorkflow(ctx, opts, workflowType, input)
}
