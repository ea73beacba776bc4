package migrate_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/faultproxy"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

func objects(keys ...string) []migrate.Object {
	out := make([]migrate.Object, len(keys))
	for i, k := range keys {
		out[i] = migrate.Object{Key: k, Size: 1}
	}
	return out
}

// The pages of a sync, cut anywhere, answer for every destination key
// exactly once: the spans of consecutive pages meet without a gap or an
// overlap, the first starts at the beginning, the last runs to the end,
// and keys outside the job's image stay out of every span.
func TestSyncPageSpansCoverTheDestinationOnce(t *testing.T) {
	maps := map[string]migrate.KeyMap{
		"no prefixes":         {},
		"destination prefix":  {DestPrefix: "copy/"},
		"source prefix kept":  {SourcePrefix: "p/", DestPrefix: "copy/"},
		"source prefix strip": {SourcePrefix: "p/", DestPrefix: "copy/", StripSourcePrefix: true},
	}
	src := []string{"p/a", "p/b", "p/c", "p/d", "p/e"}
	for name, m := range maps {
		pages := []migrate.Page{
			{Objects: objects(src[0:2]...), Bounded: true},
			{Objects: objects(src[2:4]...), Bounded: true, After: "p/b"},
			{Objects: objects(src[4:]...), Bounded: true, After: "p/d", Final: true},
		}
		var probe []string // destination keys before, between, on and after the mapped ones
		for _, k := range []string{"p/", "p/0", "p/a", "p/aa", "p/b", "p/bb", "p/c", "p/d", "p/dd", "p/e", "p/z", "p0", "q"} {
			probe = append(probe, m.Dest(k))
		}
		probe = append(probe, "copy", "copy/", "other", "~")
		for _, k := range probe {
			in := 0
			for _, p := range pages {
				if migrate.SpanOf(m, p).Contains(k) {
					in++
				}
			}
			image := len(k) >= len(m.Dest(m.SourcePrefix)) && k[:len(m.Dest(m.SourcePrefix))] == m.Dest(m.SourcePrefix)
			if want := map[bool]int{true: 1, false: 0}[image]; in != want {
				t.Errorf("%s: destination key %q is in %d spans, want %d", name, k, in, want)
			}
		}
	}
}

func TestSyncSpanOfARange(t *testing.T) {
	m := migrate.KeyMap{DestPrefix: "d/"}
	// A split job's last page ends at its range's end; its first starts
	// after the range's start.
	first := migrate.Page{Objects: objects("b1", "b2"), Bounded: true, After: "a"}
	last := migrate.Page{Objects: objects("c1"), Bounded: true, After: "b2", Final: true, Until: "c9"}
	for k, want := range map[string]bool{"d/a": false, "d/a0": true, "d/b2": true, "d/c5": true, "d/c9": true, "d/d": false} {
		in := migrate.SpanOf(m, first).Contains(k) || migrate.SpanOf(m, last).Contains(k)
		if in != want {
			t.Errorf("%s: in a span %t, want %t", k, in, want)
		}
	}
	// An empty last page still answers for the tail.
	tail := migrate.Page{Bounded: true, After: "c1", Final: true}
	if !migrate.SpanOf(m, tail).Contains("d/zz") || migrate.SpanOf(m, tail).Contains("d/c1") {
		t.Error("the empty last page does not answer for the tail alone")
	}
}

func TestSyncExtraneousLeavesMappedKeysAndProbes(t *testing.T) {
	m := migrate.KeyMap{DestPrefix: "copy/"}
	p := migrate.Page{Objects: objects("a", "c"), Bounded: true, Final: true}
	listed := objects("copy/.edgeflow-precheck-job", "copy/.edgeflow-precheck/x", "copy/a", "copy/b", "copy/c", "copy/d", "other/e")
	if got := migrate.Extraneous(m, p, nil, listed); !slices.Equal(got, []string{"copy/b", "copy/d"}) {
		t.Fatalf("extraneous %v", got)
	}
}

// With filters, a destination object is extraneous only if no source key
// maps to it, kept or left out (Page.Excluded), and the filters keep it by
// its key below the image of the source prefix and its size.
func TestSyncExtraneousKeepsWhatTheFiltersLeaveOut(t *testing.T) {
	m := migrate.KeyMap{SourcePrefix: "p/", DestPrefix: "copy/"}
	max := int64(100)
	f, err := migrate.Filter{Rules: []migrate.FilterRule{{Exclude: "/tmp/**"}}, MaxSize: &max}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	p := migrate.Page{Objects: objects("p/a"), Excluded: []string{"p/big", "p/tmp/x"}, Bounded: true, Final: true}
	listed := objects("copy/p/a", "copy/p/big", "copy/p/gone", "copy/p/tmp/gone", "copy/p/tmp/x", "copy/p/x/tmp/y")
	listed = append(listed, migrate.Object{Key: "copy/p/zz-huge-gone", Size: 101})
	got := migrate.Extraneous(m, p, f, listed)
	if !slices.Equal(got, []string{"copy/p/gone", "copy/p/x/tmp/y"}) {
		t.Fatalf("extraneous %v, want the two the filters keep and the source lacks", got)
	}
}

// A page's span reaches its last listed key even when the filters left it
// out, so the next page's span starts after it with no gap; a page of
// keys all left out still answers for its range.
func TestSyncSpanReachesTheLastKeyListed(t *testing.T) {
	m := migrate.KeyMap{DestPrefix: "d/"}
	pages := []migrate.Page{
		{Objects: objects("a"), Excluded: []string{"b"}, Bounded: true},
		{Excluded: []string{"c", "d"}, Bounded: true, After: "b"},
		{Objects: objects("e"), Bounded: true, After: "d", Final: true},
	}
	for _, k := range []string{"d/a", "d/b", "d/bb", "d/c", "d/d", "d/dd", "d/e", "d/z"} {
		in := 0
		for _, p := range pages {
			if migrate.SpanOf(m, p).Contains(k) {
				in++
			}
		}
		if in != 1 {
			t.Errorf("%s is in %d spans, want 1", k, in)
		}
	}
}

func TestSyncCounters(t *testing.T) {
	results := []migrate.ObjectResult{
		{Key: "new", Status: migrate.StatusCopied, Reason: migrate.ReasonAbsent},
		{Key: "grew", Status: migrate.StatusCopied, Reason: migrate.ReasonSizeDiffers},
		{Key: "edited", Status: migrate.StatusCopied, Reason: migrate.ReasonETagDiffers + "; part size raised"},
		{Key: "same", Status: migrate.StatusSkipped, Reason: migrate.ReasonIdentical, Verify: migrate.VerifyMatch},
		{Key: "same-md5", Status: migrate.StatusSkipped, Reason: migrate.ReasonIdenticalChecksum},
		{Key: "gone-meanwhile", Status: migrate.StatusSkipped, Reason: "deleted from the source after it was listed"},
		{Key: "old", Status: migrate.StatusExtraneous, Reason: migrate.ReasonExtraneous},
		{Key: "older", Status: migrate.StatusDeleted, Reason: migrate.ReasonExtraneousGone},
	}
	c := migrate.CountResults(results)
	if c.Copied != 3 || c.Changed != 2 || c.Skipped != 3 || c.Unchanged != 2 || c.Extraneous != 2 || c.Deleted != 1 || c.Done() != 6 {
		t.Fatalf("counters %+v", c)
	}
	if n := migrate.DifferenceCount(c, false); n != 2 {
		t.Fatalf("differences %d, want 2 (the skip that is no copy, the object left at the destination)", n)
	}
	d := migrate.Differences(results, 10)
	if len(d) != 2 || d[0].Key != "gone-meanwhile" || d[1].Key != "old" {
		t.Fatalf("differences %+v", d)
	}
	if d := migrate.Differences(results, 1); len(d) != 1 {
		t.Fatalf("differences beyond the bound: %+v", d)
	}
}

// A bounded page counts what the destination holds in its span that the
// source lacks, deletes it only when asked, and a retry of a page that
// deleted (its worker died before storing results) counts the same keys.
func TestCopyPageOfASyncFindsAndDeletesExtraneous(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	jobs := migrate.JobStore{Store: env.Store, Bucket: migratetest.Bucket(t, env.Store, "jobs")}
	srcBucket := migratetest.Bucket(t, env.Store, "sync-src")
	dstBucket := migratetest.Bucket(t, env.Store2, "sync-dst")
	migratetest.Seed(t, env.Store, srcBucket, []migratetest.Object{{Key: "b", Data: []byte("b")}, {Key: "d", Data: []byte("d2")}})
	migratetest.Seed(t, env.Store2, dstBucket, []migratetest.Object{
		{Key: "c/a", Data: []byte("a")}, {Key: "c/b", Data: []byte("b")}, {Key: "c/c", Data: []byte("c")}, {Key: "c/d", Data: []byte("d1")},
		{Key: "c/e", Data: []byte("e")}, {Key: "keep/x", Data: []byte("x")},
	})
	listed := migratetest.List(t, env.Store, srcBucket, "")
	sides := migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: env.Store2, DestBucket: dstBucket, Map: migrate.KeyMap{DestPrefix: "c/"}}
	run := func(seq int, del bool) migrate.PageRun {
		return migrate.PageRun{Jobs: jobs, Job: "job", Execution: "ex", Seq: seq, Sides: sides, Options: testOptions(), DeleteExtraneous: del}
	}
	put := func(seq int) {
		if err := jobs.PutPage(ctx, "job", "ex", migrate.Page{Seq: seq, Objects: listed, Bounded: true, Final: true}); err != nil {
			t.Fatal(err)
		}
	}
	put(1)
	out, err := migrate.CopyPage(ctx, run(1, false))
	c := out.Counters
	if err != nil || c.Copied != 1 || c.Changed != 1 || c.Unchanged != 1 || c.Extraneous != 3 || c.Deleted != 0 {
		t.Fatalf("count only: %+v %v", c, err)
	}
	if keys := keysOf(t, env.Store2, dstBucket); len(keys) != 6 {
		t.Fatalf("without --delete-extraneous the destination lost objects: %v", keys)
	}
	// Deleting: the plan is stored first; a worker that dies after the
	// deletes but before the results leaves a retry the same plan.
	put(2)
	if err := objectstore.PutJSON(ctx, jobs.Store, jobs.Bucket, migrate.ExtraneousKey("job", "ex", 2), []string{"c/a", "c/c", "c/e"}); err != nil {
		t.Fatal(err)
	}
	if err := env.Store2.Delete(ctx, dstBucket, "c/a"); err != nil { // deleted by the attempt that died
		t.Fatal(err)
	}
	out, err = migrate.CopyPage(ctx, run(2, true))
	c = out.Counters
	if err != nil || c.Copied != 0 || c.Unchanged != 2 || c.Extraneous != 3 || c.Deleted != 3 {
		t.Fatalf("delete: %+v %v", c, err)
	}
	if keys := keysOf(t, env.Store2, dstBucket); !slices.Equal(keys, []string{"c/b", "c/d", "keep/x"}) {
		t.Fatalf("destination after the deletes: %v", keys)
	}
	data, _, err := objectstore.ReadAll(ctx, env.Store2, dstBucket, "c/d")
	if err != nil || !bytes.Equal(data, []byte("d2")) {
		t.Fatalf("changed object: %q %v", data, err)
	}
}

func keysOf(t *testing.T, s objectstore.Store, bucket string) []string {
	t.Helper()
	var keys []string
	for _, o := range migratetest.List(t, s, bucket, "") {
		keys = append(keys, o.Key)
	}
	return keys
}

// A destination that fails while a sync's page looks at it for objects the
// source lacks is the store down, as for the copies: the page stops with a
// StoreDownError (the job waits for the store), not an error that spends
// the page's attempts.
func TestSyncPageStopsForADestinationThatResets(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	jobs := migrate.JobStore{Store: env.Store, Bucket: migratetest.Bucket(t, env.Store, "sync-outage-jobs")}
	srcBucket := migratetest.Bucket(t, env.Store, "sync-outage-src")
	listed := migratetest.Seed(t, env.Store, srcBucket, outageObjects(3))
	dstBucket := migratetest.Bucket(t, env.Store2, "sync-outage-dst")
	proxy := faultproxy.New(env.MinIO2.Endpoint, faultproxy.Faults{Reset: 1}, 7)
	defer proxy.Close()
	cfg := env.Store2.Config()
	cfg.Endpoint, cfg.MaxRetries = proxy.Endpoint, 1
	dst, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := jobs.PutPage(ctx, "job", "ex", migrate.Page{Seq: 0, Objects: listed, Bounded: true, Final: true}); err != nil {
		t.Fatal(err)
	}
	run := migrate.PageRun{Jobs: jobs, Job: "job", Execution: "ex", Seq: 0, Options: testOptions(),
		Sides: migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: dst, DestBucket: dstBucket}}
	_, err = migrate.CopyPage(ctx, run)
	var down *migrate.StoreDownError
	if !errors.As(err, &down) || down.Side != migrate.SideDest || !strings.Contains(down.Reason, "listing the destination") {
		t.Fatalf("a sync's page against a resetting destination: %v; want a StoreDownError for the destination", err)
	}
}
