package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// PageRun is one page of one job execution, with what copying it needs.
type PageRun struct {
	Jobs      JobStore
	Job       string
	Execution string
	Seq       int
	Sides     Sides
	Options   TransferOptions
	// KeepPartial is asked when the context ended before every object was
	// done: true stores what was done (a job being aborted wants it in its
	// report), false stores nothing so a retry does the whole page (a
	// worker shutting down).
	KeepPartial func() bool
	// DeleteExtraneous: a bounded page (a sync's) deletes the destination
	// objects in its span the source does not have; otherwise it counts
	// them. Differences is how many of the objects that leave the two
	// sides different the outcome names (a cutover's; 0 none).
	DeleteExtraneous bool
	Differences      int
	// Filter is the job's (nil: none): a bounded page never takes what it
	// leaves out for extraneous.
	Filter *KeyFilter
}

func (r PageRun) keepPartial() bool { return r.KeepPartial != nil && r.KeepPartial() }

// withHealth is the page's options with a StoreHealth the page can ask
// afterwards whether a store went down.
func (r PageRun) withHealth() TransferOptions {
	opts := r.Options
	if opts.Health == nil {
		opts.Health = NewStoreHealth(nil)
	}
	return opts
}

// PageOutcome is what a page did.
type PageOutcome struct {
	Counters Counters
	// Redriven is how many dead letters a redrive took up.
	Redriven int
	// Stopped: the context ended before every object was done.
	Stopped bool
	// Differences are the first PageRun.Differences objects left different.
	Differences []Difference
}

// CountResults totals a page's results.
func CountResults(results []ObjectResult) Counters {
	var c Counters
	for _, r := range results {
		c.Count(r)
	}
	return c
}

// CopyPage copies a listed page. A page whose results are stored already
// (an earlier attempt finished, but its report was lost) is not copied
// again: its stored results are counted. Results are stored last, after
// the dead letters, so they prove the page is done; the listed page is
// then deleted. When ctx ends early, see PageRun.KeepPartial.
func CopyPage(ctx context.Context, r PageRun) (PageOutcome, error) {
	if stored, found, err := r.Jobs.GetResults(ctx, r.Job, r.Execution, r.Seq); err != nil {
		return PageOutcome{}, err
	} else if found {
		return PageOutcome{Counters: CountResults(stored), Differences: Differences(stored, r.Differences)}, nil
	}
	page, err := r.Jobs.GetPage(ctx, r.Job, r.Execution, r.Seq)
	if err != nil {
		return PageOutcome{}, fmt.Errorf("page %d: %w", r.Seq, err)
	}
	var plan []string
	if page.Bounded {
		// Before the copies: what the copies write is the source's.
		if plan, err = r.extraneousPlan(ctx, page); err != nil {
			return PageOutcome{}, pageError(r.Seq, err)
		}
	}
	opts := r.withHealth()
	results := Transfer(ctx, r.Sides, page.Objects, opts)
	if o := opts.Health.Down(); o != nil {
		// Nothing is stored: the page is done again, recovering, once the
		// store is back, and what it copied meanwhile is found there.
		return PageOutcome{}, &StoreDownError{*o}
	}
	done := results[:0:0]
	for _, res := range results {
		if res.Status != "" {
			done = append(done, res)
		}
	}
	stopped := len(done) < len(results)
	if stopped && !r.keepPartial() {
		return PageOutcome{Counters: CountResults(done), Stopped: true}, nil
	}
	if !stopped {
		extra, err := r.settleExtraneous(ctx, plan)
		if err != nil {
			return PageOutcome{}, pageError(r.Seq, err)
		}
		done = append(done, extra...)
	}
	// Stored with the store's own deadline even if ctx ended: an aborted
	// page's report still lists what it did.
	sctx := context.WithoutCancel(ctx)
	if err := r.Jobs.PutDead(sctx, r.Job, r.Execution, r.Seq, deadLetters(done)); err != nil {
		return PageOutcome{}, err
	}
	if err := r.Jobs.PutResults(sctx, r.Job, r.Execution, r.Seq, done); err != nil {
		return PageOutcome{}, err
	}
	if !stopped {
		if err := r.Jobs.DeletePage(sctx, r.Job, r.Execution, r.Seq); err != nil {
			return PageOutcome{}, err
		}
	}
	return PageOutcome{Counters: CountResults(done), Stopped: stopped, Differences: Differences(done, r.Differences)}, nil
}

// pageError names the page in err, but for an outage, which the activity
// passes on as it is.
func pageError(seq int, err error) error {
	var down *StoreDownError
	if errors.As(err, &down) {
		return err
	}
	return fmt.Errorf("page %d: %w", seq, err)
}

func deadLetters(results []ObjectResult) []DeadLetter {
	var dead []DeadLetter
	for _, r := range results {
		if r.Status == StatusFailed {
			dead = append(dead, DeadLetter{Object: Object{Key: r.Key}, Error: r.Error, Attempts: r.Attempts})
		}
	}
	return dead
}

// RedriveOutcome is the stored outcome of one page in one redrive pass.
type RedriveOutcome struct {
	Results  []ObjectResult `json:"results"`
	Counters Counters       `json:"counters"`
	Redriven int            `json:"redriven"`
}

// RedrivePage retries the dead letters of a page (pass > 0). Its outcome
// is stored first, then applied to the page's results and dead letters;
// applying it again changes nothing, so a retried redrive that finds its
// outcome stored only applies it.
func RedrivePage(ctx context.Context, r PageRun, pass int) (PageOutcome, error) {
	key := RedriveKey(r.Job, r.Execution, pass, r.Seq)
	var stored RedriveOutcome
	_, err := objectstore.GetJSON(ctx, r.Jobs.Store, r.Jobs.Bucket, key, &stored)
	switch {
	case err == nil:
		return applyRedrive(ctx, r, stored)
	case !errors.Is(err, objectstore.ErrNoSuchKey):
		return PageOutcome{}, err
	}
	dead, err := r.Jobs.GetDead(ctx, r.Job, r.Execution, r.Seq)
	if err != nil {
		return PageOutcome{}, err
	}
	objects := make([]Object, len(dead))
	for i, d := range dead {
		objects[i] = Object{Key: d.Key}
	}
	opts := r.withHealth()
	opts.KeysOnly, opts.Recovering = true, true
	results := Transfer(ctx, r.Sides, objects, opts)
	if o := opts.Health.Down(); o != nil {
		return PageOutcome{}, &StoreDownError{*o}
	}
	var out RedriveOutcome
	for i, res := range results {
		if res.Status == "" {
			continue
		}
		res.Attempts += dead[i].Attempts
		out.Results = append(out.Results, res)
	}
	out.Counters, out.Redriven = CountResults(out.Results), len(out.Results)
	if out.Redriven < len(dead) && !r.keepPartial() {
		return PageOutcome{Counters: out.Counters, Redriven: out.Redriven, Stopped: true}, nil
	}
	sctx := context.WithoutCancel(ctx)
	if err := objectstore.PutJSON(sctx, r.Jobs.Store, r.Jobs.Bucket, key, out); err != nil {
		return PageOutcome{}, err
	}
	o, err := applyRedrive(sctx, r, out)
	o.Stopped = out.Redriven < len(dead)
	return o, err
}

// applyRedrive replaces the redriven objects' lines in the page's results
// and keeps as dead letters only those still failing (or not tried).
func applyRedrive(ctx context.Context, r PageRun, out RedriveOutcome) (PageOutcome, error) {
	redone := make(map[string]ObjectResult, len(out.Results))
	for _, res := range out.Results {
		redone[res.Key] = res
	}
	results, _, err := r.Jobs.GetResults(ctx, r.Job, r.Execution, r.Seq)
	if err != nil {
		return PageOutcome{}, err
	}
	for i, res := range results {
		if n, ok := redone[res.Key]; ok {
			results[i] = n
		}
	}
	dead, err := r.Jobs.GetDead(ctx, r.Job, r.Execution, r.Seq)
	if err != nil {
		return PageOutcome{}, err
	}
	remaining := dead[:0]
	for _, d := range dead {
		n, ok := redone[d.Key]
		switch {
		case !ok:
			remaining = append(remaining, d)
		case n.Status == StatusFailed:
			remaining = append(remaining, DeadLetter{Object: Object{Key: d.Key}, Error: n.Error, Attempts: n.Attempts})
		}
	}
	if err := r.Jobs.PutResults(ctx, r.Job, r.Execution, r.Seq, results); err != nil {
		return PageOutcome{}, err
	}
	if err := r.Jobs.PutDead(ctx, r.Job, r.Execution, r.Seq, remaining); err != nil {
		return PageOutcome{}, err
	}
	return PageOutcome{Counters: out.Counters, Redriven: out.Redriven}, nil
}

// StoredOutcome is a page's outcome as stored, when the page finished
// (pass 0: its results; a redrive pass: its stored outcome).
func StoredOutcome(ctx context.Context, jobs JobStore, job, execution string, pass, seq int) (PageOutcome, bool, error) {
	if pass == 0 {
		results, found, err := jobs.GetResults(ctx, job, execution, seq)
		if err != nil || !found {
			return PageOutcome{}, false, err
		}
		return PageOutcome{Counters: CountResults(results)}, true, nil
	}
	var stored RedriveOutcome
	_, err := objectstore.GetJSON(ctx, jobs.Store, jobs.Bucket, RedriveKey(job, execution, pass, seq), &stored)
	if errors.Is(err, objectstore.ErrNoSuchKey) {
		return PageOutcome{}, false, nil
	}
	if err != nil {
		return PageOutcome{}, false, err
	}
	return PageOutcome{Counters: stored.Counters, Redriven: stored.Redriven}, true, nil
}
