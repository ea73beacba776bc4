package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// One MinIO reached as localhost and as 127.0.0.1 is one store: copying a
// bucket into itself is refused by identity (a probe object written at the
// destination and found through the source), not by comparing endpoint
// strings; disjoint prefixes of one bucket are allowed.
func TestPrecheckRefusesOverlapsOfOneBucketByIdentity(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	host := env.MinIO.Endpoint
	if !strings.HasPrefix(host, "127.0.0.1:") {
		t.Fatalf("endpoint %s: the test renames 127.0.0.1", host)
	}
	cfg := env.Store.Config()
	cfg.Endpoint = "localhost:" + strings.TrimPrefix(host, "127.0.0.1:")
	other, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bucket := migratetest.Bucket(t, env.Store, "same")
	migratetest.Seed(t, env.Store, bucket, []migratetest.Object{{Key: "a/x.js", Data: []byte("x")}})
	elsewhere := migratetest.Bucket(t, env.Store, "elsewhere")
	for _, c := range []struct {
		src, dst  string // prefixes of bucket
		dstBucket string
		refused   bool
	}{
		{"", "", bucket, true},
		{"a/", "a/copy/", bucket, true}, // the copies would be listed again
		{"a/copy/", "a/", bucket, true}, // the copies would land among the sources
		{"", "b/", bucket, true},
		{"a/", "b/", bucket, false},
		{"", "", elsewhere, false},
	} {
		src := migrate.Location{Bucket: bucket, Prefix: c.src}
		dst := migrate.Location{Bucket: c.dstBucket, Prefix: c.dst}
		err := migrate.Precheck(ctx, env.Store, src, src.String()+" on "+host, other, dst, dst.String()+" on "+cfg.Endpoint, "", "job-1")
		var pe *migrate.PrecheckError
		switch {
		case !c.refused && err != nil:
			t.Errorf("%s → %s: %v, want allowed", src, dst, err)
		case c.refused && (!errors.As(err, &pe) || !errors.Is(err, migrate.ErrSameBucket)):
			t.Errorf("%s → %s: %v, want refused as one bucket", src, dst, err)
		case c.refused:
			msg := err.Error()
			if !strings.Contains(msg, src.String()+" on "+host) || !strings.Contains(msg, dst.String()+" on "+cfg.Endpoint) {
				t.Errorf("the refusal does not name both locations: %s", msg)
			}
			if strings.Contains(msg, cfg.AccessKey) || strings.Contains(msg, cfg.SecretKey) {
				t.Errorf("the refusal shows credentials: %s", msg)
			}
		}
		// The probe is removed whatever the verdict.
		for _, k := range migratetest.List(t, env.Store, c.dstBucket, "") {
			if strings.Contains(k.Key, "edgeflow-precheck") {
				t.Fatalf("%s → %s: the probe %s was left behind", src, dst, k.Key)
			}
		}
	}
}
