package migrate_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// A sync with --delete-extraneous deletes only what the job's filters
// keep: copies at the destination of source objects the filters leave out
// (by pattern or by size, a whole page of them included), and destination
// objects the filters leave out whose source is gone, stay; an object the
// filters keep whose source is gone is deleted.
func TestSyncDeleteExtraneousLeavesWhatTheFiltersExclude(t *testing.T) {
	startWorker(t, 3)
	lb := bulkCopied(t, "fsync", 60)
	var excluded []migratetest.Object
	for i := range 45 { // more than a page (40) of them: one page keeps nothing
		excluded = append(excluded, migratetest.Object{Key: fmt.Sprintf("s/tmp/%05d.bin", i), Data: []byte("scratch")})
	}
	excluded = append(excluded, migratetest.Object{Key: "s/big.bin", Data: bytes.Repeat([]byte("b"), 10<<10)})
	migratetest.Seed(t, env.Store, lb.srcBucket, excluded)
	// Their copies are at the destination already (another tool's, an
	// earlier job's), with two objects the source lacks: one the filters
	// leave out (by pattern, by size), one they keep.
	atDest := []migratetest.Object{
		{Key: "live/s/tmp/gone.bin", Data: []byte("x")},
		{Key: "live/s/huge-gone.bin", Data: bytes.Repeat([]byte("h"), 10<<10)},
		{Key: "live/s/stray.bin", Data: []byte("stray")},
	}
	for _, o := range excluded {
		atDest = append(atDest, migratetest.Object{Key: "live/" + o.Key, Data: o.Data})
	}
	migratetest.Seed(t, env.Store2, lb.dstBucket, atDest)
	maxSize := int64(8 << 10)
	lb.in.Filter = &migrate.Filter{Rules: []migrate.FilterRule{{Exclude: "tmp/**"}}, MaxSize: &maxSize}

	st, err := wait(t, start(t, lb.in))
	if err != nil || st.State != contract.StateCompleted || st.Listed != 60 || st.Copied != 60 || st.Filtered != int64(len(excluded)) {
		t.Fatalf("bulk copy with filters: %+v %v", st, err)
	}
	lb.remove(t, "s/00005.bin")

	stdout, stderr, code := migrateCLI(t, nil, "sync", lb.job, "--delete-extraneous", "--json")
	var r syncReport
	oneJSON(t, stdout, &r)
	if code != 0 || r.Listed != 59 || r.Filtered != int64(len(excluded)) || r.Extraneous != 2 || r.Deleted != 2 || r.Copied != 0 {
		t.Fatalf("sync --delete-extraneous (exit %d): %s\n%s", code, stdout, stderr)
	}
	keys := lb.destKeys(t)
	for _, o := range atDest {
		if o.Key == "live/s/stray.bin" {
			continue
		}
		if !slices.Contains(keys, o.Key) {
			t.Errorf("the sync deleted %s, which the filters leave out", o.Key)
		}
	}
	for _, gone := range []string{"live/s/stray.bin", "live/s/00005.bin"} {
		if slices.Contains(keys, gone) {
			t.Errorf("the sync left %s, which the filters keep and the source lacks", gone)
		}
	}
}

// `migrate start` with each kind of filter copies exactly the objects they
// keep and counts the rest as filtered: patterns in the order given (an
// anchored exclude before an include, an include implying the rest out),
// sizes, and times on either side of a cut between two batches.
func TestStartCopiesWhatTheFiltersKeep(t *testing.T) {
	startWorker(t, 3)
	srcBucket := migratetest.Bucket(t, env.Store, "filter-src")
	kib := func(n int) []byte { return bytes.Repeat([]byte("k"), n<<10) }
	older := migratetest.Seed(t, env.Store, srcBucket, []migratetest.Object{
		{Key: "a/keep.js", Data: kib(2)}, {Key: "a/skip.tmp", Data: kib(2)}, {Key: "a/tiny.js", Data: []byte("10 bytes..")},
		{Key: "a/big.js", Data: kib(20)}, {Key: "tmp/x.js", Data: kib(2)}, {Key: "a/tmp/y.js", Data: kib(2)}, {Key: "c/readme.md", Data: kib(2)},
	})
	all := migratetest.Seed(t, env.Store, srcBucket, []migratetest.Object{{Key: "b/new.js", Data: kib(2)}})
	var cut time.Time
	for _, o := range all {
		if o.Key == "b/new.js" {
			cut = o.LastModified
		}
	}
	for _, o := range older {
		if !o.LastModified.Before(cut) {
			t.Fatalf("the second batch is not newer than the first (%s at %s, cut %s)", o.Key, o.LastModified, cut)
		}
	}
	run := func(name string, filters ...string) []string {
		t.Helper()
		dstBucket := migratetest.Bucket(t, env.Store2, "filter-"+name)
		stdout, stderr, code := migrateCLI(t, nil, append(append([]string{"start", "--json"}, jobArgs(srcBucket, dstBucket)...), filters...)...)
		var st contract.Status
		oneJSON(t, stdout, &st)
		var keys []string
		for _, o := range migratetest.List(t, env.Store2, dstBucket, "cli/") {
			keys = append(keys, strings.TrimPrefix(o.Key, "cli/"))
		}
		if code != 0 || st.Copied != int64(len(keys)) || st.Filtered != int64(len(all)-len(keys)) || st.Filter == nil {
			t.Fatalf("%s: exit %d, %d copied of %v, filtered %d\n%s\n%s", name, code, st.Copied, keys, st.Filtered, stdout, stderr)
		}
		return keys
	}
	for _, c := range []struct {
		name    string
		filters []string
		want    []string
	}{
		{"patterns-and-sizes", []string{"--exclude", "/tmp/**", "--exclude", "*.tmp", "--include", "*.js", "--min-size", "1k", "--max-size", "16k"},
			[]string{"a/keep.js", "a/tmp/y.js", "b/new.js"}},
		{"after", []string{"--modified-after", cut.UTC().Format(time.RFC3339Nano)}, []string{"b/new.js"}},
		{"before", []string{"--modified-before", cut.UTC().Format(time.RFC3339Nano), "--include", "/a/*"},
			[]string{"a/big.js", "a/keep.js", "a/skip.tmp", "a/tiny.js"}},
	} {
		if got := run(c.name, c.filters...); !slices.Equal(got, c.want) {
			t.Errorf("%s: copied %v, want %v", c.name, got, c.want)
		}
	}
}
