package migrate_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

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
