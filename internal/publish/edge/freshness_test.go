package edge

import (
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
)

// A version published after its library's package document was cached is
// served within missRevalidateAfter of being asked for, not after the
// package TTL (30 s by default): on a request for a version it does not
// list, the edge reads a package document older than that again. The file
// URL, the API and the browse page alike.
func TestNewVersionServedBeforeThePackageTTL(t *testing.T) {
	ctx := t.Context()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	_, ts, _ := newTestEdge(t, func(c *Config) { c.Now = now; c.MetaTTL = time.Hour })

	pkg := catalog.Package{Name: "quickrelease", Description: "releases often", Filename: "q.js"}
	if err := publishVersion(ctx, testEnv.store, testEnv.buckets, pkg, "1.0.0", []fixtureFile{{Path: "q.js", Data: []byte("one")}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if resp := get(t, ts.URL+"/ajax/libs/quickrelease/1.0.0/q.js", nil); resp.StatusCode != 200 {
		t.Fatalf("1.0.0: %d", resp.StatusCode)
	}
	for i, v := range []string{"1.1.0", "1.2.0", "1.3.0"} {
		if err := publishVersion(ctx, testEnv.store, testEnv.buckets, pkg, v, []fixtureFile{{Path: "q.js", Data: []byte(v)}}, time.Now()); err != nil {
			t.Fatal(err)
		}
		clock.Add(int64(missRevalidateAfter + time.Second))
		urls := []string{"/ajax/libs/quickrelease/" + v + "/q.js", "/libraries/quickrelease/" + v, "/browse/quickrelease/" + v}
		resp := get(t, ts.URL+urls[i], nil)
		if resp.StatusCode != 200 {
			t.Errorf("%s, published %v before and within the package TTL: %d %s, want 200", urls[i], missRevalidateAfter+time.Second, resp.StatusCode, resp.body)
		}
	}
}

// However many versions that do not exist are asked for, a library's
// package document is read at most once per missRevalidateAfter for them.
func TestMissingVersionsReadThePackageDocumentOncePerPeriod(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	counter, base := countingEdge(t, func(c *Config) { c.Now = now; c.MetaTTL = time.Hour })
	path := "/" + testEnv.buckets.Meta + "/packages/" + testLib + ".json"
	if resp := get(t, fileURL(base, "2.0.0", "data/info.json"), nil); resp.StatusCode != 200 {
		t.Fatalf("a published file: %d", resp.StatusCode)
	}
	for period := 1; period <= 3; period++ {
		clock.Add(int64(missRevalidateAfter))
		var n atomic.Int64
		concurrently(16, func() {
			for range 20 {
				if resp, err := rawClient.Get(fileURL(base, fmt.Sprintf("9.%d.%d", period, n.Add(1)), "x.js")); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
		if got := counter.gets(path); got != 1+period {
			t.Fatalf("period %d: 320 requests for versions that do not exist: the package document read %d times in all, want %d (once at first, once a period)", period, got, 1+period)
		}
	}
}
