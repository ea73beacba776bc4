package migrate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{MinIO: true, SecondMinIO: true}, &env)
}

const mib = 1 << 20

// through gives a store reached through a counting proxy.
func through(t *testing.T, p *migratetest.Proxy, base *s3.Store) *s3.Store {
	t.Helper()
	cfg := base.Config()
	cfg.Endpoint, cfg.MaxRetries = p.Endpoint, 1
	st, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func testOptions() migrate.TransferOptions {
	return migrate.TransferOptions{
		Policy: migrate.OverwriteIfDifferent, Concurrency: 8,
		MultipartCutoff: 6 * mib, PartSize: 5 * mib, PartConcurrency: 3, CopyCutoff: 6 * mib,
		Backoff: migrate.Backoff{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond},
	}
}

func byStatus(results []migrate.ObjectResult) map[string][]string {
	out := map[string][]string{}
	for _, r := range results {
		out[r.Status] = append(out[r.Status], r.Key)
	}
	return out
}

func TestTransferBetweenStores(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	objs := migratetest.OddObjects(t, 12*mib+12345)
	srcBucket := migratetest.Bucket(t, env.Store, "src")
	listed := migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "dst")
	proxy := migratetest.NewProxy(env.MinIO2.Endpoint)
	defer proxy.Close()
	sides := migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: through(t, proxy, env.Store2), DestBucket: dstBucket,
		Map: migrate.KeyMap{DestPrefix: "copy/"}}

	opts := testOptions()
	opts.Verify = true
	results := migrate.Transfer(ctx, sides, listed, opts)
	st := byStatus(results)
	if len(st[migrate.StatusCopied]) != len(objs) {
		t.Fatalf("copied %v; results %+v", st[migrate.StatusCopied], results)
	}
	for _, r := range results {
		if r.Verify != migrate.VerifyMatch || r.Reason != migrate.ReasonAbsent || r.Attempts != 1 {
			t.Errorf("%s: %+v", r.Key, r)
		}
	}
	migratetest.CheckCopies(t, env.Store2, dstBucket, sides.Map, objs)
	// Written once each: a fault-free run never writes twice.
	writes := proxy.Writes()
	for _, o := range objs {
		if n := writes[dstBucket+"/copy/"+o.Key]; n != 1 {
			t.Errorf("%s written %d times", o.Key, n)
		}
	}
	// The large object went up in parts (its ETag says so).
	info, err := env.Store2.Stat(ctx, dstBucket, "copy/large/blob.bin")
	if err != nil || !strings.HasSuffix(info.ETag, "-3") {
		t.Fatalf("large object: etag %q, %v; want a 3-part upload", info.ETag, err)
	}

	// Run again: everything is there and identical, nothing is written. The
	// multipart copy needs its MD5 computed to be compared.
	proxy.ResetWrites()
	again := migrate.Transfer(ctx, sides, listed, testOptions())
	for _, r := range again {
		want := migrate.ReasonIdentical
		if r.Key == "large/blob.bin" {
			want = migrate.ReasonIdenticalChecksum
		}
		if r.Status != migrate.StatusSkipped || r.Reason != want {
			t.Errorf("second run %s: %+v, want skipped (%s)", r.Key, r, want)
		}
	}
	if w := proxy.Writes(); len(w) != 0 {
		t.Fatalf("second run wrote %v", w)
	}

	// never skips what exists even if different; always rewrites.
	if _, err := env.Store2.Put(ctx, dstBucket, "copy/meta/full.json", strings.NewReader("changed"), 7, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	never := testOptions()
	never.Policy = migrate.OverwriteNever
	for _, r := range migrate.Transfer(ctx, sides, listed, never) {
		if r.Status != migrate.StatusSkipped || r.Reason != migrate.ReasonNever {
			t.Errorf("never: %s %+v", r.Key, r)
		}
	}
	ifDifferent := migrate.Transfer(ctx, sides, listed, testOptions())
	if got := byStatus(ifDifferent)[migrate.StatusCopied]; !slices.Equal(got, []string{"meta/full.json"}) {
		t.Fatalf("if-different copied %v, want only the changed object", got)
	}
	always := testOptions()
	always.Policy = migrate.OverwriteAlways
	proxy.ResetWrites()
	if got := byStatus(migrate.Transfer(ctx, sides, listed, always))[migrate.StatusCopied]; len(got) != len(objs) {
		t.Fatalf("always copied %v", got)
	}
	if w := proxy.Writes(); len(w) != len(objs) {
		t.Fatalf("always wrote %d objects, want %d", len(w), len(objs))
	}
}

func TestTransferOnOneStoreCopiesServerSide(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	objs := migratetest.OddObjects(t, 12*mib+12345)
	srcBucket := migratetest.Bucket(t, env.Store, "same-src")
	listed := migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store, "same-dst")
	proxy := migratetest.NewProxy(env.MinIO.Endpoint)
	defer proxy.Close()
	// Both sides through the proxy: one store, so copies stay server side.
	store := through(t, proxy, env.Store)
	sides := migrate.Sides{Source: store, SourceBucket: srcBucket, Dest: store, DestBucket: dstBucket}
	opts := testOptions()
	opts.Verify = true
	results := migrate.Transfer(ctx, sides, listed, opts)
	for _, r := range results {
		if r.Status != migrate.StatusCopied || r.Verify != migrate.VerifyMatch {
			t.Errorf("%s: %+v", r.Key, r)
		}
	}
	migratetest.CheckCopies(t, env.Store, dstBucket, sides.Map, objs)
	writes := proxy.Writes()
	for _, o := range objs {
		if n := writes[dstBucket+"/"+o.Key]; n != 1 {
			t.Errorf("%s written %d times", o.Key, n)
		}
	}
	// Above the copy cutoff the object was composed from part copies.
	info, err := env.Store.Stat(ctx, dstBucket, "large/blob.bin")
	if err != nil || !strings.HasSuffix(info.ETag, "-3") {
		t.Fatalf("large object: etag %q, %v; want a composed copy of 3 parts", info.ETag, err)
	}
}

func TestTransferRetriedNeverCopiesAgain(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	objs := migratetest.OddObjects(t, 12*mib+12345)[:5]
	srcBucket := migratetest.Bucket(t, env.Store, "retry-src")
	listed := migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "retry-dst")
	proxy := migratetest.NewProxy(env.MinIO2.Endpoint)
	defer proxy.Close()
	sides := migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: through(t, proxy, env.Store2), DestBucket: dstBucket}
	started := time.Now()
	// An attempt that copied three objects before its worker died...
	opts := testOptions()
	opts.Policy, opts.JobStarted = migrate.OverwriteAlways, started
	migrate.Transfer(ctx, sides, listed[:3], opts)
	// ...and its retry over the whole page, with overwrite=always: the three
	// are this job's own copies, counted as copied and not written again.
	opts.Recovering = true
	results := migrate.Transfer(ctx, sides, listed, opts)
	for _, r := range results {
		if r.Status != migrate.StatusCopied {
			t.Fatalf("%s: %+v", r.Key, r)
		}
	}
	for _, o := range objs {
		if n := proxy.Writes()[dstBucket+"/"+o.Key]; n != 1 {
			t.Errorf("%s written %d times across the attempt and its retry", o.Key, n)
		}
	}
	c := migrate.CountResults(results)
	if c.Copied != 5 || c.Failed != 0 {
		t.Fatalf("counters %+v", c)
	}
}

func TestTransferWaitsOutThrottling(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	var objs []migratetest.Object
	for i := range 40 {
		objs = append(objs, migratetest.Object{Key: fmt.Sprintf("t/%03d", i), Data: []byte(strings.Repeat("x", i))})
	}
	srcBucket := migratetest.Bucket(t, env.Store, "thr-src")
	listed := migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "thr-dst")
	proxy := migratetest.NewProxy(env.MinIO2.Endpoint)
	defer proxy.Close()
	sides := migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: through(t, proxy, env.Store2), DestBucket: dstBucket}
	opts := testOptions()
	opts.Concurrency = 16
	opts.Controller = migrate.NewController(16)
	// The next 60 requests to the destination are told to slow down.
	proxy.Throttle(60)
	results := migrate.Transfer(ctx, sides, listed, opts)
	c := migrate.CountResults(results)
	if c.Copied != 40 || c.Failed != 0 {
		t.Fatalf("under throttling: %+v", c)
	}
	if proxy.Throttled() == 0 || c.Throttled == 0 {
		t.Fatalf("no throttling seen: proxy %d, counted %d", proxy.Throttled(), c.Throttled)
	}
	if got := opts.Controller.Limit(); got >= 16 {
		t.Fatalf("concurrency limit %d after throttling; want lowered below 16", got)
	}
}

// The last object of a page, alone in failing when its destination stops
// (a proxy before it answers 502), cannot blame the store by the count of
// keys: its last attempt asks the probe. Failing, the store is down and the
// object waits (undone, not a dead letter); passing, the error is its own.
func TestLoneStoreFailureAsksTheProbe(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	srcBucket := migratetest.Bucket(t, env.Store, "lone-src")
	listed := migratetest.Seed(t, env.Store, srcBucket, []migratetest.Object{{Key: "last", Data: []byte("x")}})
	gone := migratetest.NewProxy(env.MinIO2.Endpoint)
	gone.Close() // nothing answers there: a proxy before it says 502
	dead := migratetest.NewProxy(gone.Endpoint)
	defer dead.Close()
	sides := migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: through(t, dead, env.Store2), DestBucket: "lone-dst"}
	for _, probeFails := range []bool{true, false} {
		opts := testOptions()
		probes := 0
		opts.Probe = func(context.Context, string) error {
			probes++
			if probeFails {
				return errors.New("the list of the destination failed")
			}
			return nil
		}
		opts.Health = migrate.NewStoreHealth(nil)
		res := migrate.Transfer(ctx, sides, listed, opts)[0]
		switch out := opts.Health.Down(); {
		case probes != 1:
			t.Errorf("probe failing %v: %d probes, want 1", probeFails, probes)
		case probeFails && (res.Status != "" || out == nil || out.Side != migrate.SideDest || !strings.Contains(out.Reason, "probe failed")):
			t.Errorf("probe failing: result %+v, outage %+v; want the object undone and the destination down", res, out)
		case !probeFails && (res.Status != migrate.StatusFailed || out != nil):
			t.Errorf("probe passing: result %+v, outage %+v; want a dead letter and no outage", res, out)
		}
	}
}

func TestTransferDeadLetters(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	srcBucket := migratetest.Bucket(t, env.Store, "dl-src")
	migratetest.Seed(t, env.Store, srcBucket, []migratetest.Object{{Key: "here", Data: []byte("x")}})
	dstBucket := migratetest.Bucket(t, env.Store2, "dl-dst")
	sides := migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: env.Store2, DestBucket: dstBucket}
	opts := testOptions()
	opts.KeysOnly = true
	results := migrate.Transfer(ctx, sides, []migrate.Object{{Key: "here", Size: -1}, {Key: "missing", Size: -1}}, opts)
	if results[0].Status != migrate.StatusCopied || results[1].Status != migrate.StatusFailed || results[1].Error != "not found at the source" {
		t.Fatalf("results %+v", results)
	}
	// A destination that refuses the key for good: failed at once, no retries.
	long := migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: env.Store2, DestBucket: dstBucket,
		Map: migrate.KeyMap{DestPrefix: strings.Repeat("p", 1100) + "/"}}
	results = migrate.Transfer(ctx, long, []migrate.Object{{Key: "here", Size: -1}}, opts)
	if results[0].Status != migrate.StatusFailed || results[0].Attempts != 1 {
		t.Fatalf("a refused key: %+v", results[0])
	}
}

func TestPrecheck(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	srcBucket := migratetest.Bucket(t, env.Store, "pc-src")
	migratetest.Seed(t, env.Store, srcBucket, []migratetest.Object{{Key: "a", Data: nil}})
	dstBucket := migratetest.Bucket(t, env.Store2, "pc-dst")
	src := migrate.Location{Bucket: srcBucket}
	dst := migrate.Location{Bucket: dstBucket, Prefix: "into/"}
	if err := migrate.Precheck(ctx, env.Store, src, "src", env.Store2, dst, "dst", "", "job-1"); err != nil {
		t.Fatalf("precheck of usable sides: %v", err)
	}
	// Nothing left behind: no object, no unfinished upload.
	if left := migratetest.List(t, env.Store2, dstBucket, ""); len(left) != 0 {
		t.Fatalf("precheck left %v", left)
	}
	mc, err := minio.New(env.MinIO2.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(env.MinIO2.AccessKey, env.MinIO2.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	for u := range mc.ListIncompleteUploads(ctx, dstBucket, "", true) {
		t.Fatalf("precheck left an unfinished upload: %+v", u)
	}
	badCreds, _ := s3.New(s3.Config{Endpoint: env.MinIO2.Endpoint, AccessKey: "testaccess2", SecretKey: "wrong-secret"})
	cases := []struct {
		name      string
		src, dst  objectstore.Store
		srcL, dsL migrate.Location
		side      string
		want      string
	}{
		{"missing source bucket", env.Store, env.Store2, migrate.Location{Bucket: "no-such-src"}, dst, migrate.SideSource, "the bucket does not exist"},
		{"missing destination bucket", env.Store, env.Store2, src, migrate.Location{Bucket: "no-such-dst"}, migrate.SideDest, "the bucket does not exist"},
		{"rejected destination credentials", env.Store, badCreds, src, dst, migrate.SideDest, "credentials are not accepted"},
	}
	for _, c := range cases {
		err := migrate.Precheck(ctx, c.src, c.srcL, "S", c.dst, c.dsL, "D", "", "job-1")
		var pe *migrate.PrecheckError
		if !errors.As(err, &pe) || pe.Side != c.side || !strings.Contains(pe.Problem, c.want) {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if strings.Contains(err.Error(), "wrong-secret") {
			t.Errorf("%s: the error shows a secret: %v", c.name, err)
		}
	}
}

func TestCopyPageAndRedriveAreIdempotent(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	jobs := migrate.JobStore{Store: env.Store, Bucket: migratetest.Bucket(t, env.Store, "jobs")}
	srcBucket := migratetest.Bucket(t, env.Store, "pw-src")
	migratetest.Seed(t, env.Store, srcBucket, []migratetest.Object{{Key: "a", Data: []byte("a")}, {Key: "b", Data: []byte("b")}, {Key: "c", Data: []byte("c")}})
	dstBucket := migratetest.Bucket(t, env.Store2, "pw-dst")
	proxy := migratetest.NewProxy(env.MinIO2.Endpoint)
	defer proxy.Close()
	dst := through(t, proxy, env.Store2)
	// "b" is missing at the source when the page is copied: a dead letter.
	page := migrate.Page{Seq: 7, Objects: []migrate.Object{{Key: "a", Size: -1}, {Key: "b", Size: -1}, {Key: "c", Size: -1}}}
	if err := env.Store.Delete(ctx, srcBucket, "b"); err != nil {
		t.Fatal(err)
	}
	if err := jobs.PutPage(ctx, "job", "ex", page); err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	opts.KeysOnly = true
	run := migrate.PageRun{Jobs: jobs, Job: "job", Execution: "ex", Seq: 7,
		Sides: migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: dst, DestBucket: dstBucket}, Options: opts}
	out, err := migrate.CopyPage(ctx, run)
	if err != nil || out.Counters.Copied != 2 || out.Counters.Failed != 1 {
		t.Fatalf("copy page: %+v %v", out, err)
	}
	// A retry finds the stored results: same counts, nothing copied again.
	again, err := migrate.CopyPage(ctx, run)
	if err != nil || again.Counters != out.Counters {
		t.Fatalf("retried page: %+v %v", again, err)
	}
	if w := proxy.Writes(); len(w) != 2 {
		t.Fatalf("writes %v", w)
	}
	seqs, last, err := jobs.DeadPages(ctx, "job", "ex", -1, 10)
	if err != nil || !slices.Equal(seqs, []int{7}) || !last {
		t.Fatalf("dead pages %v %v %v", seqs, last, err)
	}
	// b reappears at the source; a redrive copies it and clears the dead letter.
	migratetest.Seed(t, env.Store, srcBucket, []migratetest.Object{{Key: "b", Data: []byte("b")}})
	red, err := migrate.RedrivePage(ctx, run, 1)
	if err != nil || red.Redriven != 1 || red.Counters.Copied != 1 || red.Counters.Failed != 0 {
		t.Fatalf("redrive: %+v %v", red, err)
	}
	twice, err := migrate.RedrivePage(ctx, run, 1)
	if err != nil || !reflect.DeepEqual(twice, red) {
		t.Fatalf("redrive retried: %+v %v", twice, err)
	}
	if seqs, _, _ := jobs.DeadPages(ctx, "job", "ex", -1, 10); len(seqs) != 0 {
		t.Fatalf("dead letters left: %v", seqs)
	}
	results, _, _ := jobs.GetResults(ctx, "job", "ex", 7)
	statuses := map[string]string{}
	for _, r := range results {
		statuses[r.Key] = r.Status
	}
	if !maps.Equal(statuses, map[string]string{"a": "copied", "b": "copied", "c": "copied"}) {
		t.Fatalf("report after redrive: %v", statuses)
	}
	stored, found, err := migrate.StoredOutcome(ctx, jobs, "job", "ex", 1, 7)
	if err != nil || !found || stored.Redriven != 1 {
		t.Fatalf("stored redrive outcome %+v %v %v", stored, found, err)
	}
	var buf bytes.Buffer
	w, _ := migrate.NewReportWriter(&buf, migrate.FormatCSV)
	if err := jobs.ForEachResult(ctx, "job", "ex", w.Write); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	if lines := strings.Count(buf.String(), "\n"); lines != 4 {
		t.Fatalf("report:\n%s", buf.String())
	}
}

func TestListingPagesAndKeyLists(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	bucket := migratetest.Bucket(t, env.Store, "list")
	var objs []migratetest.Object
	for i := range 25 {
		objs = append(objs, migratetest.Object{Key: fmt.Sprintf("p/%02d", i), Data: []byte{byte(i)}})
	}
	objs = append(objs, migratetest.Object{Key: "other/x", Data: []byte("x")})
	migratetest.Seed(t, env.Store, bucket, objs)
	loc := migrate.Location{Bucket: bucket, Prefix: "p/"}
	var keys []string
	token := ""
	for pages := 1; ; pages++ {
		l, err := migrate.ListSource(ctx, env.Store, loc, migrate.KeyRange{After: "p/04", Until: "p/20"}, token, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range l.Objects {
			keys = append(keys, o.Key)
		}
		if l.Last {
			break
		}
		token = l.Next
		if pages > 10 {
			t.Fatal("listing does not end")
		}
	}
	if len(keys) != 16 || keys[0] != "p/05" || keys[15] != "p/20" {
		t.Fatalf("range listing: %v", keys)
	}
	// A page larger than one listing request is listed in several.
	small := smallPages{Store: env.Store, max: 3, n: new(int)}
	l, err := migrate.ListSource(ctx, small, loc, migrate.KeyRange{}, "", 8)
	if err != nil || len(l.Objects) != 8 || l.Objects[7].Key != "p/07" || l.Last || small.calls() != 3 {
		t.Fatalf("page of 8 in requests of 3: %d objects, last %v, %d requests, %v", len(l.Objects), l.Last, small.calls(), err)
	}
	rest, err := migrate.ListSource(ctx, small, loc, migrate.KeyRange{}, l.Next, 100)
	if err != nil || len(rest.Objects) != 17 || rest.Objects[0].Key != "p/08" || !rest.Last {
		t.Fatalf("the rest: %d objects from %v, last %v, %v", len(rest.Objects), rest.Objects[:1], rest.Last, err)
	}
	jobs := migrate.JobStore{Store: env.Store, Bucket: bucket}
	list := "a\nwith space\n\n+plus\r\nü\n"
	if err := objectstore.PutBytes(ctx, env.Store, bucket, "keys.txt", []byte(list), objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	token = ""
	for {
		l, err := migrate.ListKeyList(ctx, jobs, "keys.txt", token, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range l.Objects {
			got = append(got, o.Key)
		}
		if l.Last {
			break
		}
		token = l.Next
	}
	if !slices.Equal(got, []string{"a", "with space", "+plus", "ü"}) {
		t.Fatalf("key list: %q", got)
	}
}

// smallPages is a store whose listings return at most max keys, as if S3's
// limit were that small.
type smallPages struct {
	objectstore.Store
	max int
	n   *int
}

func (s smallPages) List(ctx context.Context, bucket string, opts objectstore.ListOptions) (objectstore.ListPage, error) {
	if s.n != nil {
		*s.n++
	}
	if opts.MaxKeys == 0 || opts.MaxKeys > s.max {
		opts.MaxKeys = s.max
	}
	return s.Store.List(ctx, bucket, opts)
}

func (s smallPages) calls() int { return *s.n }
