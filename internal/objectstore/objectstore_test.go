package objectstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{MinIO: true}, &env) }

func TestUpdateJSONLosesNoConcurrentUpdate(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	if err := env.Store.EnsureBuckets(ctx, "os-test"); err != nil {
		t.Fatal(err)
	}
	type counter struct{ N int }
	const writers = 16
	var wg sync.WaitGroup
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := objectstore.UpdateJSON(ctx, env.Store, "os-test", "counter.json", func(c *counter, _ bool) (bool, error) {
				c.N++
				return true, nil
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var c counter
	if _, err := env.Store.GetJSON(ctx, "os-test", "counter.json", &c); err != nil {
		t.Fatal(err)
	}
	if c.N != writers {
		t.Errorf("counter = %d after %d concurrent increments: an update was lost", c.N, writers)
	}
}

func TestReplicateLeavesTheLatestDocumentOnTheDestination(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	if err := env.Store.EnsureBuckets(ctx, "os-test", "os-test-replica"); err != nil {
		t.Fatal(err)
	}
	// Each writer appends to one document and then replicates it, as the
	// publish commit does with the package document and the search index:
	// however the copies interleave, the replica must end as the final state.
	type list struct{ Items []int }
	const writers = 16
	var wg sync.WaitGroup
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := objectstore.UpdateJSON(ctx, env.Store, "os-test", "list.json", func(l *list, _ bool) (bool, error) {
				l.Items = append(l.Items, i)
				return true, nil
			}); err != nil {
				t.Error(err)
				return
			}
			if err := objectstore.Replicate(ctx, env.Store, "os-test", env.Store, "os-test-replica", "list.json"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	source, err := env.Store.Get(ctx, "os-test", "list.json")
	if err != nil {
		t.Fatal(err)
	}
	replica, err := env.Store.Get(ctx, "os-test-replica", "list.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(replica) != string(source) {
		t.Errorf("replica %s differs from the source %s", replica, source)
	}
	if info, err := env.Store.Stat(ctx, "os-test-replica", "list.json"); err != nil || info.ContentType != "application/json" {
		t.Errorf("replica content type %q (%v), want application/json", info.ContentType, err)
	}
	if err := objectstore.Replicate(ctx, env.Store, "os-test", env.Store, "os-test-replica", "missing.json"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("replicating a missing object: %v; want ErrNotFound", err)
	}
}

func TestErrorsNameTheObjectAndHideTheSecret(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	_, err := env.Store.Get(ctx, "os-test", "missing/key.json")
	if !errors.Is(err, objectstore.ErrNotFound) || !strings.Contains(err.Error(), "os-test/missing/key.json") {
		t.Errorf("missing object: %v; want ErrNotFound naming the key", err)
	}
	cfg := env.Store.Config()
	cfg.SecretKey = "wrong-secret-value"
	bad, err := objectstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = bad.Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), "credentials rejected") {
		t.Fatalf("wrong secret: %v; want a clear credentials error", err)
	}
	if strings.Contains(err.Error(), "wrong-secret-value") || strings.Contains(cfg.String(), "wrong-secret-value") {
		t.Errorf("the secret leaked: %v / %s", err, cfg)
	}
	if _, err := objectstore.New(objectstore.Config{Endpoint: "http://host:9000"}); err == nil || !strings.Contains(err.Error(), "without a scheme") {
		t.Errorf("endpoint with scheme: %v", err)
	}
}
