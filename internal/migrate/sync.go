package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// A sync run lists the source again and copies what is new or changed
// (overwrite if-different: size, then ETag or MD5). It also answers for
// the destination's keys between its pages: each listed page of a sync is
// bounded (Page.Bounded), so the destination range from the key after the
// previous page to this page's last key (to the end, for the last page) is
// the page's to look at, and together the pages cover the destination
// exactly once. What is there and not at the source is extraneous: counted,
// and deleted when the run asks for it.

// What a sync found of an object the source does not have.
const (
	// StatusExtraneous: at the destination, not at the source; left there.
	StatusExtraneous = "extraneous"
	// StatusDeleted: at the destination, not at the source; deleted.
	StatusDeleted = "deleted"

	ReasonExtraneous     = "not at the source; --delete-extraneous deletes it"
	ReasonExtraneousGone = "not at the source"
)

// DestSpan is the destination keys one bounded page answers for: those
// under Prefix within Range.
type DestSpan struct {
	Prefix string
	Range  KeyRange
	// Empty: the page answers for no destination key.
	Empty bool
}

// SpanOf is the destination span of a bounded page. Its source range runs
// from page.After (exclusive) to its last key, or for the final page to
// page.Until ("" unbounded); its last key is the last listed, whether the
// job's filters kept it or not (Page.Excluded); the key map carries it over, with bounds that
// lie outside the source prefix clamped to it (the map preserves key order,
// so the span's order is the page's).
func SpanOf(m KeyMap, p Page) DestSpan {
	prefix := m.Dest(m.SourcePrefix)
	span := DestSpan{Prefix: prefix}
	inPrefix := func(k string) bool { return strings.HasPrefix(k, m.SourcePrefix) }
	switch {
	case p.After == "" || p.After < m.SourcePrefix:
		// No lower bound within the prefix.
	case inPrefix(p.After):
		span.Range.After = m.Dest(p.After)
	default:
		return DestSpan{Empty: true} // after every key of the prefix
	}
	upper := p.Until
	if !p.Final {
		// The last key listed, kept by the filters or not: the next
		// page's span starts after it.
		if upper = p.LastListed(); upper == "" {
			return DestSpan{Empty: true}
		}
	}
	switch {
	case upper == "":
	case inPrefix(upper):
		span.Range.Until = m.Dest(upper)
	case upper < m.SourcePrefix:
		return DestSpan{Empty: true} // before every key of the prefix
	default:
		// After every key of the prefix: no upper bound within it.
	}
	return span
}

// Contains reports whether a destination key is in the span.
func (s DestSpan) Contains(k string) bool {
	return !s.Empty && strings.HasPrefix(k, s.Prefix) && s.Range.Contains(k)
}

// isProbe: a precheck's probe object, which a precheck under way may hold
// at the destination for a moment; never taken for extraneous.
func isProbe(destPrefix, key string) bool {
	rest := strings.TrimPrefix(key, destPrefix)
	return strings.HasPrefix(rest, ".edgeflow-precheck")
}

// Extraneous are the destination objects of listed (in key order, any
// range) that lie in the span, that no source key of the page maps to
// (kept by the job's filters or left out: Page.Excluded), and that the
// filters keep, judged by their key below the job's image of the source
// prefix and their size, as rclone's sync judges a destination: what the
// filters leave out is never deleted. Times are not asked: a copy's is
// when it was written. Precheck probes are never extraneous.
func Extraneous(m KeyMap, p Page, f *KeyFilter, listed []Object) []string {
	span := SpanOf(m, p)
	mapped := make(map[string]bool, len(p.Objects)+len(p.Excluded))
	for _, o := range p.Objects {
		mapped[m.Dest(o.Key)] = true
	}
	for _, k := range p.Excluded {
		mapped[m.Dest(k)] = true
	}
	var out []string
	for _, o := range listed {
		k := o.Key
		if !span.Contains(k) || mapped[k] || isProbe(m.DestPrefix, k) {
			continue
		}
		if !f.KeepKey(RelativeKey(span.Prefix, k)) || !f.KeepSize(o.Size) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// listSpan lists the destination objects of a span, in order.
func listSpan(ctx context.Context, s Sides, span DestSpan) ([]Object, error) {
	if span.Empty {
		return nil, nil
	}
	opts := objectstore.ListOptions{Prefix: span.Prefix}
	if span.Range.After > span.Prefix {
		opts.StartAfter = span.Range.After
	}
	var objs []Object
	for {
		page, err := s.Dest.List(ctx, s.DestBucket, opts)
		if err != nil {
			return nil, fmt.Errorf("list the destination for objects the source does not have: %w", err)
		}
		for _, o := range page.Objects {
			if span.Range.Until != "" && o.Key > span.Range.Until {
				return objs, nil
			}
			objs = append(objs, objectOf(o))
		}
		if page.NextToken == "" {
			return objs, nil
		}
		opts.ContinuationToken, opts.StartAfter = page.NextToken, ""
	}
}

// extraneousPlan is what a bounded page found at the destination that the
// source does not have. It is stored before anything is deleted, so a
// page retried after its worker died deletes and counts the same keys
// (those it deleted already are no longer there to be listed).
func (r PageRun) extraneousPlan(ctx context.Context, p Page) ([]string, error) {
	key := ExtraneousKey(r.Job, r.Execution, r.Seq)
	var plan []string
	_, err := objectstore.GetJSON(ctx, r.Jobs.Store, r.Jobs.Bucket, key, &plan)
	switch {
	case err == nil:
		return plan, nil
	case !errors.Is(err, objectstore.ErrNoSuchKey):
		return nil, err
	}
	listed, err := listSpan(ctx, r.Sides, SpanOf(r.Sides.Map, p))
	if err != nil {
		return nil, r.destinationDown(ctx, "listing the destination", err)
	}
	plan = Extraneous(r.Sides.Map, p, r.Filter, listed)
	if len(plan) == 0 {
		return nil, nil // nothing to delete: a retry may list again
	}
	if plan == nil {
		plan = []string{}
	}
	return plan, objectstore.PutJSON(ctx, r.Jobs.Store, r.Jobs.Bucket, key, plan)
}

// settleExtraneous deletes the planned keys when the run deletes (and is
// no dry run), and returns one result line for each.
func (r PageRun) settleExtraneous(ctx context.Context, plan []string) ([]ObjectResult, error) {
	if len(plan) == 0 {
		return nil, nil
	}
	status, reason := StatusExtraneous, ReasonExtraneous
	if r.DeleteExtraneous && !r.Options.DryRun {
		if err := deleteKeys(ctx, r.Sides.Dest, r.Sides.DestBucket, plan); err != nil {
			return nil, r.destinationDown(ctx, "deleting", fmt.Errorf("delete %d objects the source does not have: %w", len(plan), err))
		}
		status, reason = StatusDeleted, ReasonExtraneousGone
	}
	out := make([]ObjectResult, len(plan))
	for i, k := range plan {
		out[i] = ObjectResult{Key: k, Status: status, Reason: reason}
	}
	return out, nil
}

// destinationDown turns a failed listing or deletion at the destination
// into the store's outage when it is the store's (unreachable, 5xx, a
// network failure, or denied while a probe fails too), as a failed source
// listing is: the job then waits for the store instead of spending the
// page's attempts. Anything else is the error as it was.
func (r PageRun) destinationDown(ctx context.Context, what string, err error) error {
	switch ClassifyStoreError(err) {
	case Unreachable, StoreFailure:
	case Denied:
		if r.Options.Probe == nil {
			break
		}
		perr := r.Options.Probe(ctx, SideDest)
		if perr == nil {
			return err // the store works: the error is the request's
		}
		err = perr
	default:
		return err
	}
	return &StoreDownError{Outage: Outage{Side: SideDest, Reason: what + ": " + err.Error()}}
}

// deleteKeys deletes keys, in requests of up to 1,000 where the store
// takes them. A key already gone is no error (a retry deletes again).
func deleteKeys(ctx context.Context, s objectstore.Store, bucket string, keys []string) error {
	bulk, ok := s.(objectstore.BulkDeleter)
	for len(keys) > 0 {
		n := min(len(keys), MaxListKeys)
		if ok {
			if err := bulk.DeleteKeys(ctx, bucket, keys[:n]); err != nil {
				return err
			}
		} else {
			for _, k := range keys[:n] {
				if err := s.Delete(ctx, bucket, k); err != nil {
					return err
				}
			}
		}
		keys = keys[n:]
	}
	return nil
}

// Difference is an object that is not the same on both sides after a
// cutover's sync: its key (the destination's, for an extraneous one) and
// what differs.
type Difference struct {
	Key  string `json:"key"`
	What string `json:"what"`
}

// Differences are the first max objects of a page's results that leave the
// two sides different: failed, mismatched after the copy, skipped for any
// reason but being identical, left at the destination though the source
// does not have it, or (a dry run) still to be copied.
func Differences(results []ObjectResult, max int) []Difference {
	var out []Difference
	for _, r := range results {
		if len(out) >= max {
			break
		}
		var what string
		switch {
		case r.Status == StatusFailed:
			what = "failed: " + r.Error
		case r.Verify == VerifyMismatch:
			what = "mismatch after the copy: " + r.VerifyDetail
		case r.Status == StatusSkipped && !isUnchanged(r.Reason):
			what = "skipped: " + r.Reason
		case r.Status == StatusExtraneous:
			what = "only at the destination"
		case r.Status == StatusWouldCopy:
			what = "differs: " + r.Reason
		default:
			continue
		}
		out = append(out, Difference{Key: r.Key, What: what})
	}
	return out
}

// DifferenceCount is how many objects of c leave the two sides different
// (see Differences).
func DifferenceCount(c Counters, dryRun bool) int64 {
	n := c.Failed + c.Mismatched + (c.Skipped - c.Unchanged) + (c.Extraneous - c.Deleted)
	if dryRun {
		n += c.Copied
	}
	return n
}

func isUnchanged(reason string) bool {
	return reason == ReasonIdentical || reason == ReasonIdenticalChecksum
}

func isChange(reason string) bool {
	for _, r := range []string{ReasonSizeDiffers, ReasonETagDiffers, ReasonChecksumDiffers} {
		if strings.HasPrefix(reason, r) {
			return true
		}
	}
	return false
}
