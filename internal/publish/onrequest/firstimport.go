package onrequest

import (
	"context"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
)

// firstImportRetryAfter is what a request answered while its library's
// first import runs should wait: the import publishes several versions.
const firstImportRetryAfter = 30 * time.Second

// firstImport answers a request for a version of a library the catalog has
// never imported (nothing published, no window kept), which the rules say
// its first import takes. Publishing that version alone would make it the
// oldest published one, and later checks would never offer the rest of
// the first import; so the request starts the package's check, as
// `starters/publish --package` does (one per package: its workflow ID),
// which imports the library and keeps its window, and is answered 503 with
// Retry-After.
func (p *Publisher) firstImport(ctx context.Context, name, version string) Answer {
	key := name + "@" // no version is empty: the package's check
	w, limited := p.watches.startOrJoin(key, p.cfg.Now(), p.limiter.take, name, func(w *watch) {
		go p.startImport(w, key, name, p.startBy(ctx))
	})
	if w == nil {
		return limitedAnswer(limited)
	}
	return p.await(ctx, w, name, version)
}

// startImport starts (or joins) the package's check and remembers for
// ListingTTL that it did, so that the requests meanwhile start nothing.
func (p *Publisher) startImport(w *watch, key, name string, startBy time.Time) {
	opts, workflowType, in := pubclient.Request(name, "", nil)
	opts.StaticSummary += ", asked for at the edge"
	ctx, cancel := context.WithDeadline(context.Background(), startBy)
	defer cancel()
	run, err := p.cfg.Temporal.ExecuteWorkflow(ctx, opts, workflowType, in)
	if err != nil {
		p.cfg.Logger.Warn("a library's first import could not be started", "package", name, "error", err)
		p.watches.end(key, w, Answer{Kind: NotReady, RetryAfter: p.cfg.RetryAfter, Reason: "publishing could not be started; try again shortly"}, time.Time{})
		return
	}
	p.cfg.Logger.Info("importing a library on the first request for one of its versions", "package", name, "workflow", run.GetID(), "run", run.GetRunID())
	p.watches.end(key, w, Answer{Kind: NotReady, RetryAfter: firstImportRetryAfter,
		Reason: "the library's first import has started and publishes this version; try again shortly"}, p.cfg.Now().Add(p.cfg.ListingTTL))
}
