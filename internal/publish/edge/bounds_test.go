package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// TestSearchQueryIsBounded: a query's cost is bounded by its first 256
// bytes and 8 terms; the API refuses a longer one.
func TestSearchQueryIsBounded(t *testing.T) {
	ix := searchFixture()
	long := "jquery " + strings.Repeat("zzzz ", 13_000) // 64 KB, 13,001 terms
	q, terms := boundQuery(long)
	if len(q) > MaxSearchQueryBytes || len(terms) != MaxSearchTerms {
		t.Errorf("bounded query is %d bytes and %d terms", len(q), len(terms))
	}
	if got, want := names(ix.search(long, defaultSearchFields)), names(ix.search(q, defaultSearchFields)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("a 64 KB query ranked %v, its bounded form %v", got, want)
	}
	if q, _ := boundQuery(strings.Repeat("é", 200)); !strings.HasSuffix(q, "é") || len(q) > MaxSearchQueryBytes {
		t.Errorf("cut inside a character: %q", q[len(q)-4:])
	}
	_, ts, _ := newTestEdge(t, nil)
	resp := get(t, ts.URL+"/libraries?search="+url.QueryEscape(long), nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(resp.body), "limit is 256") {
		t.Errorf("a 64 KB search: %d %s", resp.StatusCode, resp.body)
	}
}

// TestURLsFromTheRequestVaryByHost: absolute URLs built from the request's
// Host and X-Forwarded-Proto come with Vary on both, so a shared cache
// never serves one client's URLs to another; with a public URL configured
// they do not depend on the request at all.
func TestURLsFromTheRequestVaryByHost(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	for _, path := range []string{"/libraries/" + testLib, "/libraries?search=testlib", "/browse/" + testLib + "/" + testVersion} {
		resp := get(t, ts.URL+path, map[string]string{"Host": "evil.example", "X-Forwarded-Proto": "https"})
		vary := resp.Header.Get("Vary")
		if !strings.Contains(vary, "Host") || !strings.Contains(vary, "X-Forwarded-Proto") {
			t.Errorf("%s built from the Host header: Vary %q", path, vary)
		}
	}
	_, pub, _ := newTestEdge(t, func(c *Config) { c.PublicURL = "https://cdn.example.com" })
	resp := get(t, pub.URL+"/libraries/"+testLib, map[string]string{"Host": "evil.example"})
	if strings.Contains(string(resp.body), "evil.example") || strings.Contains(resp.Header.Get("Vary"), "Host") ||
		!strings.Contains(string(resp.body), "https://cdn.example.com/ajax/libs/") {
		t.Errorf("with a public URL: Vary %q, body %.200s", resp.Header.Get("Vary"), resp.body)
	}
}

// deadlineRecorder is a ResponseWriter that takes write deadlines.
type deadlineRecorder struct {
	header    http.Header
	body      bytes.Buffer
	deadlines []time.Time
}

func (d *deadlineRecorder) Header() http.Header         { return d.header }
func (d *deadlineRecorder) WriteHeader(int)             {}
func (d *deadlineRecorder) Write(p []byte) (int, error) { return d.body.Write(p) }
func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

// TestBodiesMoveTheWriteDeadlineChunkByChunk: every 64 KiB must be taken
// within WriteIdle, so a slow reader cannot hold a connection.
func TestBodiesMoveTheWriteDeadlineChunkByChunk(t *testing.T) {
	rec := &deadlineRecorder{header: http.Header{}}
	before := time.Now()
	data := bytes.Repeat([]byte("x"), 5*deadlineChunk+1)
	if n, err := newDeadlineWriter(rec, 7*time.Second).Write(data); err != nil || n != len(data) || !bytes.Equal(rec.body.Bytes(), data) {
		t.Fatalf("write: %d, %v", n, err)
	}
	if len(rec.deadlines) != 6 {
		t.Fatalf("%d deadlines for 6 chunks", len(rec.deadlines))
	}
	for _, d := range rec.deadlines {
		if d.Before(before.Add(7*time.Second)) || d.After(time.Now().Add(7*time.Second)) {
			t.Errorf("deadline %v is not WriteIdle after its write", d)
		}
	}
}

// TestBodiesBeyondTheInflightBoundAreStreamed: with no cache and no room
// for private copies, a small file is streamed from the store and served
// whole, and nothing stays charged.
func TestBodiesBeyondTheInflightBoundAreStreamed(t *testing.T) {
	s, ts, _ := newTestEdge(t, func(c *Config) { c.CacheBytes = 0; c.InflightBytes = 1 })
	want := fixtureData(t, testVersion, "testlib.js")
	resp := get(t, ts.URL+"/ajax/libs/"+testLib+"/"+testVersion+"/testlib.js", nil)
	if resp.StatusCode != 200 || !bytes.Equal(resp.body, want) {
		t.Fatalf("file through the streamed path: %d, %d bytes (want %d)", resp.StatusCode, len(resp.body), len(want))
	}
	if !s.inflight.TryAcquire(1) {
		t.Error("the in-flight budget was left charged")
	}
}

// TestSearchIndexReadsShards: the edge reads the sharded index over the
// single document written before sharding: a shard's entry wins, a library
// only in a shard is listed, and the API's output keeps its shape.
func TestSearchIndexReadsShards(t *testing.T) {
	ctx := context.Background()
	b := testEnv.buckets
	shard := metadata.SearchShardKey(metadata.SearchShardOf(testLib))
	other := metadata.SearchShardKey(metadata.SearchShardOf("shardonly"))
	t.Cleanup(func() {
		for _, k := range []string{shard, other} {
			_ = testEnv.store.Delete(ctx, b.Meta, k)
			_ = testEnv.store.Delete(ctx, b.MirrorMeta, k)
		}
	})
	put := func(key string, entries ...metadata.IndexEntry) {
		var ix metadata.Index
		_, _ = objectstore.GetJSON(ctx, testEnv.store, b.Meta, key, &ix)
		for _, e := range entries {
			ix.Upsert(e, time.Now())
		}
		if err := objectstore.PutJSON(ctx, testEnv.store, b.Meta, key, ix); err != nil {
			t.Fatal(err)
		}
	}
	put(shard, metadata.IndexEntry{Name: testLib, Latest: testVersion, Filename: "testlib.js", Description: "from the shard"})
	put(other, metadata.IndexEntry{Name: "shardonly", Latest: "1.0.0", Filename: "s.js", Description: "only in a shard"})
	_, ts, _ := newTestEdge(t, nil)
	resp := get(t, ts.URL+"/libraries?fields=description", nil)
	var out struct {
		Results []struct {
			Name, Latest, Description string
		} `json:"results"`
		Total int `json:"total"`
	}
	if err := json.Unmarshal(resp.body, &out); err != nil {
		t.Fatalf("%s: %v", resp.body, err)
	}
	found := map[string]string{}
	for _, r := range out.Results {
		found[r.Name] = r.Description
	}
	if found[testLib] != "from the shard" || found["shardonly"] != "only in a shard" || len(found) < 3 || out.Total != len(out.Results) {
		t.Errorf("libraries %v (total %d); want the shards over the single document", found, out.Total)
	}
}
