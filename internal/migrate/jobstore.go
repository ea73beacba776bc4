package migrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// JobStore is where jobs keep what is too big for workflow history: listed
// pages, per-object results (the report), dead letters and uploaded key
// lists. It is a bucket on the engine's own store, not on either side of a
// job. Layout, per job execution:
//
//	jobs/<job>/<execution>/pages/<seq>.json        a listed page (until copied)
//	jobs/<job>/<execution>/results/<seq>.jsonl     one ObjectResult per object
//	jobs/<job>/<execution>/dead/<seq>.jsonl        the page's dead letters
//	jobs/<job>/<execution>/redrive/<pass>/<seq>.json  a redrive's outcome
//	jobs/<job>/<execution>/extraneous/<seq>.json   a sync page's keys the source lacks
//	jobs/<job>/keylists/<name>                     an uploaded --keys list
//	summaries/<job>.json                           a finished job's status (archive.go)
//
// A page's results object is written last and is the proof it was copied:
// a retried or restarted page that finds it reports what it says instead
// of copying again.
type JobStore struct {
	Store  objectstore.Store
	Bucket string
}

// DefaultJobBucket is the job store's bucket unless configured (BUCKET_MIGRATE).
const DefaultJobBucket = "migrate-jobs"

var jobIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckJobID says what is wrong with a job id: 1 to 64 letters, digits,
// '.', '_' or '-', starting with a letter or digit.
func CheckJobID(id string) error {
	if !jobIDPattern.MatchString(id) {
		return fmt.Errorf("job id %q: use 1 to 64 letters, digits, '.', '_' and '-', starting with a letter or digit", id)
	}
	return nil
}

func execPrefix(job, execution string) string { return "jobs/" + job + "/" + execution + "/" }

func seqName(seq int) string { return fmt.Sprintf("%09d", seq) }

// PageKey is the key of a listed page.
func PageKey(job, execution string, seq int) string {
	return execPrefix(job, execution) + "pages/" + seqName(seq) + ".json"
}

// ResultsKey is the key of a page's results.
func ResultsKey(job, execution string, seq int) string {
	return execPrefix(job, execution) + "results/" + seqName(seq) + ".jsonl"
}

// ResultsPrefix is the prefix of every page's results, in page order.
func ResultsPrefix(job, execution string) string { return execPrefix(job, execution) + "results/" }

// DeadKey is the key of a page's dead letters.
func DeadKey(job, execution string, seq int) string {
	return execPrefix(job, execution) + "dead/" + seqName(seq) + ".jsonl"
}

func deadPrefix(job, execution string) string { return execPrefix(job, execution) + "dead/" }

// RedriveKey is the key of one page's outcome in redrive pass pass.
func RedriveKey(job, execution string, pass, seq int) string {
	return execPrefix(job, execution) + "redrive/" + strconv.Itoa(pass) + "/" + seqName(seq) + ".json"
}

// ExtraneousKey is the key of the destination keys a sync's page found
// that the source does not have (stored before any is deleted).
func ExtraneousKey(job, execution string, seq int) string {
	return execPrefix(job, execution) + "extraneous/" + seqName(seq) + ".json"
}

// KeyListKey is where an uploaded key list is kept.
func KeyListKey(job, name string) string { return "jobs/" + job + "/keylists/" + name }

// PutPage stores a listed page.
func (s JobStore) PutPage(ctx context.Context, job, execution string, p Page) error {
	return objectstore.PutJSON(ctx, s.Store, s.Bucket, PageKey(job, execution, p.Seq), p)
}

// GetPage reads a listed page.
func (s JobStore) GetPage(ctx context.Context, job, execution string, seq int) (Page, error) {
	var p Page
	_, err := objectstore.GetJSON(ctx, s.Store, s.Bucket, PageKey(job, execution, seq), &p)
	return p, err
}

// DeletePage removes a listed page once its results are stored.
func (s JobStore) DeletePage(ctx context.Context, job, execution string, seq int) error {
	return s.Store.Delete(ctx, s.Bucket, PageKey(job, execution, seq))
}

// PutResults stores a page's results.
func (s JobStore) PutResults(ctx context.Context, job, execution string, seq int, results []ObjectResult) error {
	return s.putLines(ctx, ResultsKey(job, execution, seq), results)
}

// GetResults reads a page's results; found is false when there are none yet.
func (s JobStore) GetResults(ctx context.Context, job, execution string, seq int) (results []ObjectResult, found bool, err error) {
	found, err = getLines(ctx, s, ResultsKey(job, execution, seq), func(r ObjectResult) error {
		results = append(results, r)
		return nil
	})
	return results, found, err
}

// PutDead stores a page's dead letters, or removes them when there are none.
func (s JobStore) PutDead(ctx context.Context, job, execution string, seq int, dead []DeadLetter) error {
	if len(dead) == 0 {
		return s.Store.Delete(ctx, s.Bucket, DeadKey(job, execution, seq))
	}
	return s.putLines(ctx, DeadKey(job, execution, seq), dead)
}

// GetDead reads a page's dead letters (none when it has none).
func (s JobStore) GetDead(ctx context.Context, job, execution string, seq int) ([]DeadLetter, error) {
	var dead []DeadLetter
	_, err := getLines(ctx, s, DeadKey(job, execution, seq), func(d DeadLetter) error {
		dead = append(dead, d)
		return nil
	})
	return dead, err
}

// DeadPages lists, in order, the pages after page after (-1: from the
// first) that hold dead letters, at most max of them; last says there are
// no more.
func (s JobStore) DeadPages(ctx context.Context, job, execution string, after, max int) (seqs []int, last bool, err error) {
	prefix := deadPrefix(job, execution)
	opts := objectstore.ListOptions{Prefix: prefix, MaxKeys: max}
	if after >= 0 {
		opts.StartAfter = DeadKey(job, execution, after)
	}
	page, err := s.Store.List(ctx, s.Bucket, opts)
	if err != nil {
		return nil, false, err
	}
	for _, o := range page.Objects {
		name := strings.TrimSuffix(strings.TrimPrefix(o.Key, prefix), ".jsonl")
		seq, err := strconv.Atoi(name)
		if err != nil {
			return nil, false, fmt.Errorf("job store: unexpected object %s", o.Key)
		}
		seqs = append(seqs, seq)
	}
	return seqs, page.NextToken == "", nil
}

// ForEachResult streams every result of a job execution, page by page in
// order, in constant memory: what `migrate report` writes.
func (s JobStore) ForEachResult(ctx context.Context, job, execution string, fn func(ObjectResult) error) error {
	for o, err := range objectstore.Objects(ctx, s.Store, s.Bucket, ResultsPrefix(job, execution)) {
		if err != nil {
			return err
		}
		if _, err := getLines(ctx, s, o.Key, fn); err != nil {
			return err
		}
	}
	return nil
}

func (s JobStore) putLines(ctx context.Context, key string, items any) error {
	var buf bytes.Buffer
	var err error
	switch v := items.(type) {
	case []ObjectResult:
		err = WriteJSONLines(&buf, v)
	case []DeadLetter:
		err = WriteJSONLines(&buf, v)
	default:
		err = fmt.Errorf("job store: cannot write %T", items)
	}
	if err != nil {
		return err
	}
	return objectstore.PutBytes(ctx, s.Store, s.Bucket, key, buf.Bytes(),
		objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: "application/x-ndjson"}})
}

func getLines[T any](ctx context.Context, s JobStore, key string, fn func(T) error) (bool, error) {
	body, _, err := s.Store.Get(ctx, s.Bucket, key)
	if errors.Is(err, objectstore.ErrNoSuchKey) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer body.Close()
	if err := ReadJSONLines(body, fn); err != nil {
		return true, fmt.Errorf("job store %s/%s: %w", s.Bucket, key, err)
	}
	return true, nil
}
