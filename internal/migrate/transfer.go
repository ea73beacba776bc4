package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// Sides are the two stores of a transfer and where keys land.
type Sides struct {
	Source       objectstore.Store
	SourceBucket string
	Dest         objectstore.Store
	DestBucket   string
	Map          KeyMap
}

// TransferOptions say how a page is copied.
type TransferOptions struct {
	Policy Overwrite
	DryRun bool
	Verify bool
	// KeysOnly: the objects carry keys only (a key list, dead letters), so
	// each is looked up at the source first; one that is not there fails.
	KeysOnly bool
	// Recovering: an earlier, interrupted attempt of this page may have
	// copied some objects (see Decide).
	Recovering bool
	JobStarted time.Time
	ClockSkew  time.Duration
	// Concurrency bounds this page's transfers; Controller, shared by every
	// page of the worker that goes to the same stores, bounds them all and
	// adapts to throttling. A nil Controller means one of Concurrency.
	Concurrency int
	Controller  *Controller
	// Objects above MultipartCutoff go between stores as PartSize parts,
	// PartConcurrency at once; on one store, those above CopyCutoff are
	// composed from part copies.
	MultipartCutoff int64
	PartSize        int64
	PartConcurrency int
	CopyCutoff      int64
	// Retries of one object: transient failures up to MaxAttempts tries,
	// throttling up to MaxThrottleWait, both with Backoff between.
	Backoff         Backoff
	MaxAttempts     int
	MaxThrottleWait time.Duration
	// Progress, when set, is called after each object with the count done.
	Progress func(done int)
	// Priority orders this page's transfers against other pages' waiting
	// on the same Controller: lower first (the page's sequence number).
	Priority int
	// Health tells store errors from object errors (nil: a new one). Once
	// it calls a side down, no new object starts and those failing on the
	// store stay undone (empty Status), their attempts unspent: the job
	// waits for the store and copies them after.
	Health *StoreHealth
	// Probe checks one side as the precheck does (list and read/write);
	// it decides whether 403s on many keys are the store's (it fails) or
	// the objects' (it passes). Nil: they are the store's.
	Probe func(ctx context.Context, side string) error
	// PerObjectWrites writes each object with a request of its own even to
	// a destination that extracts archives: the path of every store that
	// does not (R2, S3), measured on MinIO.
	PerObjectWrites bool
	// BatchVerdicts, shared by the pages to one destination store,
	// remember a bucket found keeping archives whole, so later pages write
	// object by object without probing it again (nil: each page probes).
	BatchVerdicts *BatchVerdicts
}

func (o *TransferOptions) defaults() {
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.Controller == nil {
		o.Controller = NewController(o.Concurrency)
	}
	if o.PartSize <= 0 {
		o.PartSize = objectstore.DefaultPartSize
	}
	if o.MultipartCutoff <= 0 {
		o.MultipartCutoff = o.PartSize
	}
	if o.PartConcurrency <= 0 {
		o.PartConcurrency = 4
	}
	if o.CopyCutoff <= 0 {
		o.CopyCutoff = objectstore.MaxCopySize
	}
	if o.Backoff == (Backoff{}) {
		o.Backoff = DefaultBackoff
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = MaxAttempts
	}
	if o.MaxThrottleWait <= 0 {
		o.MaxThrottleWait = MaxThrottleWait
	}
	if o.Health == nil {
		o.Health = NewStoreHealth(nil)
	}
}

// Transfer copies objects per the options and returns one result per
// object, in order. Before anything is copied it reads what the
// destination holds (one listing for a page of listed keys, a lookup per
// object otherwise), so an object already there is never written again
// unless the policy says so. When ctx ends, objects not yet done keep an
// empty Status.
func Transfer(ctx context.Context, sides Sides, objects []Object, opts TransferOptions) []ObjectResult {
	opts.defaults()
	t := &transfer{sides: sides, opts: opts, objects: objects, results: make([]ObjectResult, len(objects))}
	if !opts.KeysOnly {
		t.existing = listDest(ctx, sides, objects)
	}
	if !opts.DryRun && !opts.PerObjectWrites && !opts.BatchVerdicts.Kept(sides.DestBucket) {
		t.batch = newBatcher(sides.Dest, sides.DestBucket, opts.Concurrency, opts.BatchVerdicts)
	}
	next := atomic.Int64{}
	var done atomic.Int64
	var wg sync.WaitGroup
	workers := opts.Concurrency
	if t.batch != nil {
		workers *= 3 // most may wait for their batch, holding no slot
	}
	for range min(workers, len(objects)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(objects) || ctx.Err() != nil || opts.Health.Down() != nil {
					return // no new transfers while a store is down
				}
				t.results[i] = t.one(ctx, objects[i])
				if t.results[i].Status != "" && opts.Progress != nil {
					opts.Progress(int(done.Add(1)))
				}
			}
		}()
	}
	wg.Wait()
	return t.results
}

type transfer struct {
	sides   Sides
	opts    TransferOptions
	objects []Object
	results []ObjectResult
	// existing is what the destination held when the page started, by
	// destination key; nil when it was not listed.
	existing map[string]Object
	// batch gathers small writes (nil: the destination cannot take them).
	batch *batcher
	// probes are the verdicts of Probe on suspect sides (true: down).
	probeMu sync.Mutex
	probes  map[string]bool
}

// errSkipped carries a reason to skip found while copying.
type errSkipped struct{ reason string }

func (e errSkipped) Error() string { return e.reason }

// one settles one object, retrying transient failures with backoff and
// waiting out throttling with less concurrency; what still fails is a dead
// letter.
func (t *transfer) one(ctx context.Context, obj Object) ObjectResult {
	o := t.opts
	recovering := o.Recovering
	attempts, throttled := 0, 0
	var waited time.Duration
	for {
		if err := o.Controller.Acquire(ctx, o.Priority); err != nil {
			return ObjectResult{}
		}
		actx := StepAsideWhilePaced(ctx, o.Controller.StepAside, func() { o.Controller.Rejoin(ctx, o.Priority) })
		res, err := t.attempt(actx, obj, recovering, attempts == 0 && throttled == 0)
		if err == nil || IsThrottle(err) {
			o.Controller.Release(err != nil)
		} else {
			o.Controller.ReleaseFailed()
		}
		if throttled > 0 || attempts > 0 || err == nil {
			res.Attempts, res.Throttled = attempts+1, throttled
		}
		if err == nil {
			o.Health.Succeeded()
			return res
		}
		if ctx.Err() != nil {
			return ObjectResult{} // stopped, not failed: the object stays undone
		}
		var skip errSkipped
		if errors.As(err, &skip) {
			return ObjectResult{Key: obj.Key, Status: StatusSkipped, Reason: skip.reason, Attempts: attempts + 1, Throttled: throttled}
		}
		verdict := t.observe(ctx, obj.Key, err)
		if verdict == VerdictDown {
			return ObjectResult{} // the store's error, not the object's: it waits for the store
		}
		var wait time.Duration
		switch {
		case IsThrottle(err):
			throttled++
			wait = o.Backoff.Delay(throttled, nil)
			if waited+wait > o.MaxThrottleWait {
				return failed(obj, fmt.Errorf("still throttled after %s: %w", waited.Round(time.Second), err), attempts+1, throttled)
			}
			waited += wait
		case (objectstore.IsTransient(err) || verdict == VerdictRetry) && attempts+1 < o.MaxAttempts:
			// A store-class error on a few keys yet: retried as the
			// object's, while the classifier sees whether more keys fail.
			attempts++
			wait = o.Backoff.Delay(attempts, nil)
		default:
			if verdict == VerdictRetry && t.storeFailsProbe(ctx, t.sideOf(err), err) {
				return ObjectResult{} // the store's after all: it waits for the store
			}
			return failed(obj, err, attempts+1, throttled)
		}
		// The failed attempt may have written the object after all (a
		// response lost on the way): the next one checks.
		recovering = true
		select {
		case <-ctx.Done():
			return ObjectResult{}
		case <-o.Health.DownCh():
			return ObjectResult{} // a store went down: the object waits for it
		case <-time.After(wait):
		}
	}
}

func failed(obj Object, err error, attempts, throttled int) ObjectResult {
	return ObjectResult{Key: obj.Key, Status: StatusFailed, Error: err.Error(), Attempts: attempts, Throttled: throttled}
}

// attempt decides and, if needed, copies one object once.
func (t *transfer) attempt(ctx context.Context, obj Object, recovering, first bool) (ObjectResult, error) {
	s, o := t.sides, t.opts
	src := obj
	if o.KeysOnly {
		info, err := s.Source.Stat(ctx, s.SourceBucket, obj.Key)
		if errors.Is(err, objectstore.ErrNoSuchKey) {
			return ObjectResult{Key: obj.Key, Status: StatusFailed, Error: "not found at the source"}, nil
		}
		if err != nil {
			return ObjectResult{}, err
		}
		src = objectOf(info)
		src.Key = obj.Key
	}
	dk := s.Map.Dest(obj.Key)
	dst, err := t.destination(ctx, dk, first && !recovering)
	if err != nil {
		return ObjectResult{}, err
	}
	in := DecideInput{Policy: o.Policy, Source: src, Dest: dst, Recovering: recovering, JobStarted: o.JobStarted, Skew: o.ClockSkew}
	d := Decide(in)
	if d.NeedChecksum {
		if in.SourceMD5, in.DestMD5, err = t.checksums(ctx, src, dk, *dst); err != nil {
			return ObjectResult{}, err
		}
		d = Decide(in)
	}
	res := ObjectResult{Key: obj.Key, Reason: d.Reason}
	switch {
	case d.AlreadyCopied:
		res.Status, res.Bytes = StatusCopied, src.Size
	case !d.Copy:
		res.Status = StatusSkipped
		if o.Verify && (d.Reason == ReasonIdentical || d.Reason == ReasonIdenticalChecksum) {
			res.Verify = VerifyMatch // compared already, by ETag or checksum
		}
		return res, nil
	case o.DryRun:
		res.Status, res.Bytes = StatusWouldCopy, src.Size
		return res, nil
	default:
		note, err := t.copy(ctx, src, dk, first)
		if err != nil {
			if errors.Is(err, objectstore.ErrNoSuchKey) && !o.KeysOnly {
				return ObjectResult{}, errSkipped{"deleted from the source after it was listed"}
			}
			return ObjectResult{}, err
		}
		res.Status, res.Bytes = StatusCopied, src.Size
		if note != "" {
			res.Reason += "; " + note
		}
	}
	if o.Verify {
		if res.Verify, res.VerifyDetail, err = t.verify(ctx, src, dk); err != nil {
			return ObjectResult{}, err
		}
	}
	return res, nil
}

// destination is what the destination holds under key: from the page's
// listing when it can be trusted (the first try of an object), else asked.
func (t *transfer) destination(ctx context.Context, key string, useListing bool) (*Object, error) {
	if useListing && t.existing != nil {
		if o, ok := t.existing[key]; ok {
			return &o, nil
		}
		return nil, nil
	}
	info, err := t.sides.Dest.Stat(ctx, t.sides.DestBucket, key)
	if errors.Is(err, objectstore.ErrNoSuchKey) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	o := objectOf(info)
	return &o, nil
}

func objectOf(info objectstore.ObjectInfo) Object {
	return Object{Key: info.Key, Size: info.Size, ETag: info.ETag, LastModified: info.LastModified}
}

// listDest lists the destination over the page's key range, as rclone
// does, instead of asking once per object. It gives up (nil: ask per
// object) when the range holds far more than the page, or on an error.
func listDest(ctx context.Context, s Sides, objects []Object) map[string]Object {
	if len(objects) == 0 {
		return map[string]Object{}
	}
	first, last := s.Map.Dest(objects[0].Key), s.Map.Dest(objects[len(objects)-1].Key)
	if first > last {
		return nil // not in key order: not a listed page
	}
	prefix := commonPrefix(first, last)
	opts := objectstore.ListOptions{Prefix: prefix}
	if len(first) > 0 {
		// Just below first: first without its last byte sorts before it.
		opts.StartAfter = first[:len(first)-1]
	}
	out := make(map[string]Object, len(objects))
	budget := 4*len(objects) + 1000
	for {
		page, err := s.Dest.List(ctx, s.DestBucket, opts)
		if err != nil {
			return nil
		}
		for _, o := range page.Objects {
			if o.Key > last {
				return out
			}
			out[o.Key] = objectOf(o)
		}
		if budget -= len(page.Objects); budget < 0 {
			return nil
		}
		if page.NextToken == "" {
			return out
		}
		opts.ContinuationToken, opts.StartAfter = page.NextToken, ""
	}
}

func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return a[:i]
}

// IsThrottle reports whether a store asked to slow down (SlowDown, 503, 429).
func IsThrottle(err error) bool {
	var e *objectstore.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case "SlowDown", "SlowDownRead", "SlowDownWrite", "TooManyRequests", "RequestLimitExceeded":
		return true
	}
	return e.StatusCode == 503 || e.StatusCode == 429
}
