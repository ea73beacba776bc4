package migrate_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
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

// agedStore is a real store whose listings show some keys as older than
// they are: the probes a precheck that died an hour ago left behind.
type agedStore struct {
	objectstore.Store
	aged map[string]bool
}

func (a agedStore) List(ctx context.Context, bucket string, opts objectstore.ListOptions) (objectstore.ListPage, error) {
	page, err := a.Store.List(ctx, bucket, opts)
	for i, o := range page.Objects {
		if a.aged[o.Key] {
			page.Objects[i].LastModified = o.LastModified.Add(-time.Hour)
		}
	}
	return page, err
}

// A precheck that dies between writing its probe and removing it leaves
// an object at the destination; the next precheck there removes it, but
// not a probe young enough to be another precheck's under way, nor
// anything outside the probe folder.
func TestPrecheckRemovesProbesLeftBehind(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	src := migratetest.Bucket(t, env.Store, "probe-src")
	dst := migratetest.Bucket(t, env.Store, "probe-dst")
	orphan := "copy/" + migrate.PrecheckProbeDir + "0123456789abcdef01234567"
	young := "copy/" + migrate.PrecheckProbeDir + "fedcba9876543210fedcba98"
	kept := "copy/kept.js"
	migratetest.Seed(t, env.Store, src, []migratetest.Object{{Key: "a.js", Data: []byte("a")}})
	migratetest.Seed(t, env.Store, dst, []migratetest.Object{{Key: orphan}, {Key: young}, {Key: kept, Data: []byte("k")}})
	store := agedStore{Store: env.Store, aged: map[string]bool{orphan: true, kept: true}}
	srcLoc, dstLoc := migrate.Location{Bucket: src}, migrate.Location{Bucket: dst, Prefix: "copy/"}
	if err := migrate.Precheck(ctx, env.Store, srcLoc, srcLoc.String(), store, dstLoc, dstLoc.String(), "", "job-1"); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range migratetest.List(t, env.Store, dst, "") {
		left = append(left, o.Key)
	}
	if want := []string{young, kept}; !slices.Equal(left, want) {
		t.Fatalf("left at the destination: %q, want %q (the orphan removed, the young probe and the object kept)", left, want)
	}
}
