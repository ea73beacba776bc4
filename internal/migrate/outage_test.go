package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/faultproxy"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

func outageObjects(n int) []migratetest.Object {
	var objs []migratetest.Object
	for i := range n {
		objs = append(objs, migratetest.Object{Key: fmt.Sprintf("o/%03d", i), Data: []byte(strings.Repeat("y", i+1))})
	}
	return objs
}

// A destination that resets every connection is a store down, not 60
// dead letters: the page stops with a StoreDownError, stores nothing, and
// copied again once the store is back, every object is written once.
func TestCopyPageStopsForAStoreThatResets(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	jobs := migrate.JobStore{Store: env.Store, Bucket: migratetest.Bucket(t, env.Store, "outage-jobs")}
	objs := outageObjects(60)
	srcBucket := migratetest.Bucket(t, env.Store, "outage-src")
	listed := migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "outage-dst")
	proxy := faultproxy.New(env.MinIO2.Endpoint, faultproxy.Faults{Reset: 1}, 5)
	defer proxy.Close()
	cfg := env.Store2.Config()
	cfg.Endpoint, cfg.MaxRetries = proxy.Endpoint, 1
	dst, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := jobs.PutPage(ctx, "job", "ex", migrate.Page{Seq: 0, Objects: listed}); err != nil {
		t.Fatal(err)
	}
	run := migrate.PageRun{Jobs: jobs, Job: "job", Execution: "ex", Seq: 0,
		Sides: migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: dst, DestBucket: dstBucket}, Options: testOptions()}
	_, err = migrate.CopyPage(ctx, run)
	var down *migrate.StoreDownError
	if !errors.As(err, &down) || down.Side != migrate.SideDest || !strings.Contains(down.Reason, "distinct keys") {
		t.Fatalf("copy page against a resetting destination: %v; want a StoreDownError for the destination", err)
	}
	if _, found, err := jobs.GetResults(ctx, "job", "ex", 0); err != nil || found {
		t.Fatalf("results stored for a page stopped by an outage (found %v, %v)", found, err)
	}
	if seqs, _, err := jobs.DeadPages(ctx, "job", "ex", -1, 10); err != nil || len(seqs) != 0 {
		t.Fatalf("dead letters %v, %v; want none", seqs, err)
	}

	proxy.SetFaults(faultproxy.Faults{})
	run.Options.Recovering = true
	out, err := migrate.CopyPage(ctx, run)
	if err != nil || out.Counters.Copied != int64(len(objs)) || out.Counters.Failed != 0 {
		t.Fatalf("after the outage: %+v %v", out.Counters, err)
	}
	for _, o := range objs {
		if n := proxy.Writes()[dstBucket+"/"+o.Key]; n != 1 {
			t.Errorf("%s written %d times", o.Key, n)
		}
	}
}

// Credentials revoked mid-job: 403 on every key and a probe that fails
// too is the store's error; no object becomes a dead letter. The same 403s
// with a probe that passes (a policy on some keys) are the objects'.
func TestRevokedCredentialsAreAStoreError(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	objs := outageObjects(20)
	srcBucket := migratetest.Bucket(t, env.Store, "revoked-src")
	listed := migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "revoked-dst")
	cfg := env.Store2.Config()
	cfg.SecretKey = "revoked-secret-key"
	revoked, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sides := migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: revoked, DestBucket: dstBucket}
	probed := 0
	opts := testOptions()
	opts.Health = migrate.NewStoreHealth(nil)
	opts.Probe = func(ctx context.Context, side string) error {
		probed++
		return migrate.Probe(ctx, side, revoked, migrate.Location{Bucket: dstBucket}, "job")
	}
	results := migrate.Transfer(ctx, sides, listed, opts)
	c := migrate.CountResults(results)
	down := opts.Health.Down()
	if c.Failed != 0 || down == nil || down.Side != migrate.SideDest || probed != 1 {
		t.Fatalf("revoked credentials: %+v, outage %+v, probed %d; want no failures, the destination down, one probe", c, down, probed)
	}
	if !strings.Contains(down.Reason, "probe failed") || strings.Contains(down.Reason, cfg.SecretKey) || strings.Contains(down.Reason, cfg.AccessKey) {
		t.Fatalf("reason %q", down.Reason)
	}

	opts.Health = migrate.NewStoreHealth(nil)
	opts.Probe = func(context.Context, string) error { return nil }
	results = migrate.Transfer(ctx, sides, listed, opts)
	if c := migrate.CountResults(results); c.Failed != int64(len(objs)) || opts.Health.Down() != nil {
		t.Fatalf("403s with a passing probe: %+v, outage %+v; want every object failed (the objects' errors)", c, opts.Health.Down())
	}
}
