package edge

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
)

func fileURL(base, version, path string) string {
	return base + "/ajax/libs/" + testLib + "/" + version + "/" + path
}

func decode(t *testing.T, encoding string, body []byte) []byte {
	t.Helper()
	var r io.Reader
	switch encoding {
	case "br":
		r = brotli.NewReader(bytes.NewReader(body))
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("gzip body: %v", err)
		}
		r = zr
	case "":
		return body
	default:
		t.Fatalf("unexpected Content-Encoding %q", encoding)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decode %s body: %v", encoding, err)
	}
	return out
}

func TestEncodingNegotiation(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	js := fixtureData(t, testVersion, "testlib.js")
	cases := []struct {
		acceptEncoding string
		path           string
		want           string // Content-Encoding
	}{
		{"gzip, deflate, br", "testlib.js", "br"},
		{"br", "testlib.js", "br"},
		{"BR", "testlib.js", "br"},
		{"gzip", "testlib.js", "gzip"},
		{"x-gzip", "testlib.js", "gzip"},
		{"", "testlib.js", ""},
		{"identity", "testlib.js", ""},
		{"deflate", "testlib.js", ""},
		{"br;q=0, gzip", "testlib.js", "gzip"},
		{"br;q=0, gzip;q=0", "testlib.js", ""},
		{"gzip;q=1.0, br;q=0.5", "testlib.js", "gzip"},
		{"*", "testlib.js", "br"},
		{"*;q=0, identity", "testlib.js", ""},
		{"*, br;q=0", "testlib.js", "gzip"},
		{"br;q=bogus, gzip", "testlib.js", "gzip"},
		// Formats stored without compressed twins always go as they are.
		{"br, gzip", "image.png", ""},
	}
	for _, c := range cases {
		t.Run(c.acceptEncoding+"/"+c.path, func(t *testing.T) {
			resp := get(t, fileURL(ts.URL, testVersion, c.path), map[string]string{"Accept-Encoding": c.acceptEncoding})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, body %q", resp.StatusCode, resp.body)
			}
			if got := resp.Header.Get("Content-Encoding"); got != c.want {
				t.Fatalf("Content-Encoding %q, want %q", got, c.want)
			}
			if got := resp.Header.Get("Vary"); got != "Accept-Encoding" {
				t.Errorf("Vary %q, want Accept-Encoding", got)
			}
			if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len(resp.body)) {
				t.Errorf("Content-Length %s for a %d-byte body", got, len(resp.body))
			}
			want := fixtureData(t, testVersion, c.path)
			if got := decode(t, c.want, resp.body); !bytes.Equal(got, want) {
				t.Fatalf("decoded body differs from the published file (%d vs %d bytes)", len(got), len(want))
			}
		})
	}
	resp := get(t, fileURL(ts.URL, testVersion, "testlib.js"), nil)
	if got := resp.Header.Get("Content-Type"); got != "application/javascript; charset=utf-8" {
		t.Errorf("Content-Type %q", got)
	}
	if !bytes.Equal(resp.body, js) {
		t.Errorf("identity body differs")
	}
	if got := get(t, fileURL(ts.URL, testVersion, "testlib.css"), nil).Header.Get("Content-Type"); got != "text/css; charset=utf-8" {
		t.Errorf("css Content-Type %q", got)
	}
}

func TestHeadersAndCORS(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	resp := get(t, fileURL(ts.URL, testVersion, "testlib.js"), map[string]string{"Accept-Encoding": "br"})
	want := map[string]string{
		"Cache-Control":                "public, max-age=31536000, immutable",
		"Access-Control-Allow-Origin":  "*",
		"Timing-Allow-Origin":          "*",
		"Cross-Origin-Resource-Policy": "cross-origin",
		"X-Content-Type-Options":       "nosniff",
		"Last-Modified":                testVersionDoc(t, testLib, testVersion).PublishedAt.UTC().Format(http.TimeFormat),
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	etag := resp.Header.Get("ETag")
	if !regexp.MustCompile(`^"[0-9a-f]{16}-br"$`).MatchString(etag) {
		t.Errorf("ETag %q is not a strong tag of 16 hex digits and the encoding", etag)
	}
	identity := get(t, fileURL(ts.URL, testVersion, "testlib.js"), nil).Header.Get("ETag")
	if strings.TrimSuffix(etag, `-br"`)+`"` != identity {
		t.Errorf("identity ETag %q does not share the digest of %q", identity, etag)
	}
	// The digest is the SRI's: the same content has the same tag in every version.
	if other := get(t, fileURL(ts.URL, "1.0.0", "testlib.js"), nil).Header.Get("ETag"); other != identity {
		t.Errorf("same content, different ETags: %q and %q", other, identity)
	}

	for _, u := range []string{ts.URL + "/libraries", ts.URL + "/libraries/" + testLib, ts.URL + "/ajax/libs/nope/1.0.0/x.js", ts.URL + "/stats"} {
		r := get(t, u, nil)
		if r.Header.Get("Access-Control-Allow-Origin") != "*" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: CORS/nosniff headers missing: %v", u, r.Header)
		}
	}
}

func TestHead(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	for _, ae := range []string{"", "br", "gzip"} {
		head := do(t, http.MethodHead, fileURL(ts.URL, testVersion, "data/info.json"), map[string]string{"Accept-Encoding": ae})
		full := get(t, fileURL(ts.URL, testVersion, "data/info.json"), map[string]string{"Accept-Encoding": ae})
		if head.StatusCode != http.StatusOK || len(head.body) != 0 {
			t.Fatalf("HEAD (%q): status %d with %d body bytes", ae, head.StatusCode, len(head.body))
		}
		for _, k := range []string{"Content-Length", "Content-Type", "Content-Encoding", "ETag", "Last-Modified", "Cache-Control", "Vary"} {
			if head.Header.Get(k) != full.Header.Get(k) {
				t.Errorf("HEAD (%q) %s %q, GET has %q", ae, k, head.Header.Get(k), full.Header.Get(k))
			}
		}
	}
}

func TestConditionalRequests(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	u := fileURL(ts.URL, testVersion, "testlib.js")
	first := get(t, u, map[string]string{"Accept-Encoding": "br"})
	brTag, lastModified := first.Header.Get("ETag"), first.Header.Get("Last-Modified")
	idTag := get(t, u, nil).Header.Get("ETag")
	published, _ := http.ParseTime(lastModified)

	cases := []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"matching tag", map[string]string{"Accept-Encoding": "br", "If-None-Match": brTag}, 304},
		{"weak form of the tag", map[string]string{"Accept-Encoding": "br", "If-None-Match": "W/" + brTag}, 304},
		{"tag in a list", map[string]string{"Accept-Encoding": "br", "If-None-Match": `"nope", ` + brTag}, 304},
		{"star", map[string]string{"If-None-Match": "*"}, 304},
		{"identity tag for identity", map[string]string{"If-None-Match": idTag}, 304},
		{"identity tag while asking for br", map[string]string{"Accept-Encoding": "br", "If-None-Match": idTag}, 200},
		{"other tag", map[string]string{"If-None-Match": `"0123456789abcdef"`}, 200},
		{"modified since: same time", map[string]string{"If-Modified-Since": lastModified}, 304},
		{"modified since: later", map[string]string{"If-Modified-Since": published.Add(time.Hour).Format(http.TimeFormat)}, 304},
		{"modified since: earlier", map[string]string{"If-Modified-Since": published.Add(-time.Hour).Format(http.TimeFormat)}, 200},
		{"bad date", map[string]string{"If-Modified-Since": "yesterday"}, 200},
		{"If-None-Match wins over If-Modified-Since", map[string]string{"If-None-Match": `"other"`, "If-Modified-Since": lastModified}, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := get(t, u, c.header)
			if resp.StatusCode != c.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.want)
			}
			if c.want == http.StatusNotModified {
				if len(resp.body) != 0 || resp.Header.Get("ETag") == "" || resp.Header.Get("Cache-Control") == "" {
					t.Errorf("304 with body %q / headers %v", resp.body, resp.Header)
				}
			}
		})
	}
}

func TestRange(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	info := fixtureData(t, testVersion, "data/info.json")
	big := fixtureData(t, testVersion, "big.bin")
	size := len(info)
	cases := []struct {
		name, path, rangeHeader string
		extra                   map[string]string
		wantStatus              int
		wantRange               string // Content-Range
		wantBody                []byte
	}{
		{"first bytes", "data/info.json", "bytes=0-9", nil, 206, fmt.Sprintf("bytes 0-9/%d", size), info[:10]},
		{"open end", "data/info.json", "bytes=100-", nil, 206, fmt.Sprintf("bytes 100-%d/%d", size-1, size), info[100:]},
		{"suffix", "data/info.json", "bytes=-5", nil, 206, fmt.Sprintf("bytes %d-%d/%d", size-5, size-1, size), info[size-5:]},
		{"end past the size", "data/info.json", "bytes=10-999999", nil, 206, fmt.Sprintf("bytes 10-%d/%d", size-1, size), info[10:]},
		{"range beats compression", "data/info.json", "bytes=0-3", map[string]string{"Accept-Encoding": "br, gzip"}, 206, fmt.Sprintf("bytes 0-3/%d", size), info[:4]},
		{"start past the end", "data/info.json", fmt.Sprintf("bytes=%d-", size), nil, 416, fmt.Sprintf("bytes */%d", size), nil},
		{"empty suffix", "data/info.json", "bytes=-0", nil, 416, fmt.Sprintf("bytes */%d", size), nil},
		{"several ranges are served whole", "data/info.json", "bytes=0-1,5-6", nil, 200, "", info},
		{"other unit", "data/info.json", "items=0-1", nil, 200, "", info},
		{"malformed", "data/info.json", "bytes=9-1", nil, 200, "", info},
		{"stale If-Range", "data/info.json", "bytes=0-9", map[string]string{"If-Range": `"0000000000000000"`}, 200, "", info},
		{"streamed large file", "big.bin", "bytes=1048570-1048600", nil, 206, fmt.Sprintf("bytes 1048570-1048600/%d", len(big)), big[1048570:1048601]},
		{"streamed large file suffix", "big.bin", "bytes=-3", nil, 206, fmt.Sprintf("bytes %d-%d/%d", len(big)-3, len(big)-1, len(big)), big[len(big)-3:]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			header := map[string]string{"Range": c.rangeHeader}
			for k, v := range c.extra {
				header[k] = v
			}
			resp := get(t, fileURL(ts.URL, testVersion, c.path), header)
			if resp.StatusCode != c.wantStatus {
				t.Fatalf("status %d, want %d (body %.80q)", resp.StatusCode, c.wantStatus, resp.body)
			}
			if got := resp.Header.Get("Content-Range"); got != c.wantRange {
				t.Errorf("Content-Range %q, want %q", got, c.wantRange)
			}
			if c.wantStatus == 206 && resp.Header.Get("Content-Encoding") != "" {
				t.Errorf("a range of an encoded representation: %q", resp.Header.Get("Content-Encoding"))
			}
			if c.wantBody != nil && !bytes.Equal(resp.body, c.wantBody) {
				t.Errorf("body: %d bytes, want %d", len(resp.body), len(c.wantBody))
			}
		})
	}
	// If-Range with the current identity tag honours the range.
	tag := get(t, fileURL(ts.URL, testVersion, "data/info.json"), nil).Header.Get("ETag")
	resp := get(t, fileURL(ts.URL, testVersion, "data/info.json"), map[string]string{"Range": "bytes=0-0", "If-Range": tag})
	if resp.StatusCode != 206 || string(resp.body) != string(info[:1]) {
		t.Errorf("If-Range with the current tag: status %d body %q", resp.StatusCode, resp.body)
	}
	// The whole large file streams through unchanged.
	full := get(t, fileURL(ts.URL, testVersion, "big.bin"), nil)
	if full.StatusCode != 200 || !bytes.Equal(full.body, big) || full.Header.Get("X-Edge-Source") != "primary" {
		t.Errorf("big file: status %d, %d bytes, source %q", full.StatusCode, len(full.body), full.Header.Get("X-Edge-Source"))
	}
}

func TestUnpublishedIsNotServed(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	cases := map[string]string{
		"files uploaded, no metadata":            fileURL(ts.URL, testUnlisted, "testlib.js"),
		"version document, package doesn't list": fileURL(ts.URL, "4.0.0", "testlib.js"),
		"object not in the version document":     fileURL(ts.URL, "1.0.0", "secret.js"),
		"unknown library":                        ts.URL + "/ajax/libs/no-such-lib/1.0.0/a.js",
		"unknown file":                           fileURL(ts.URL, testVersion, "nope.js"),
		"case differs":                           fileURL(ts.URL, testVersion, "TESTLIB.JS"),
		"directory":                              fileURL(ts.URL, testVersion, "data"),
		"no file":                                ts.URL + "/ajax/libs/" + testLib + "/" + testVersion,
		"version range matching nothing":         fileURL(ts.URL, "^7", "testlib.js"),
	}
	for name, u := range cases {
		t.Run(name, func(t *testing.T) {
			resp := get(t, u, nil)
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("status %d, want 404 (body %.80q)", resp.StatusCode, resp.body)
			}
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || bytes.Contains(resp.body, []byte("__loaded")) {
				t.Errorf("404 is not a clean text error: %q %q", resp.Header.Get("Content-Type"), resp.body)
			}
		})
	}
}

// rawRequest sends path byte for byte (no client-side cleaning or escaping).
func rawRequest(t *testing.T, addr, method, path string) (int, []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: cdn.test\r\nConnection: close\r\n\r\n", method, path); err != nil {
		t.Fatalf("write request: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read response to %q: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func TestHostilePaths(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	addr := strings.TrimPrefix(ts.URL, "http://")
	base := "/ajax/libs/" + testLib + "/" + testVersion + "/"
	paths := []string{
		base + "../../../../etc/passwd",
		base + "../2.0.0/testlib.js",
		base + "%2e%2e/%2e%2e/%2e%2e/etc/passwd",
		base + "%2E%2E/1.0.0/secret.js",
		base + "..%2f..%2f1.0.0%2fsecret.js",
		base + "data%2Finfo.json",
		base + "data%2finfo.json",
		base + "data%5Cinfo.json",
		base + `data\info.json`,
		base + "./testlib.js",
		base + "%2e/testlib.js",
		base + "data/./info.json",
		base + "/testlib.js",
		base + "data//info.json",
		base + "testlib.js%00.png",
		base + "testlib.js%00",
		base + "testlib.js%0a",
		base + "testlib.js%0d%0aX-Injected:%201",
		base + "testlib.js/",
		base + strings.Repeat("a", 1100),
		base + strings.Repeat("a/", 600) + "x.js",
		base + "%ZZ",
		"/ajax/libs/../libs/" + testLib + "/" + testVersion + "/testlib.js",
		"/ajax/libs/" + testLib + "/%2e%2e/testlib.js",
		"/ajax/libs/%2e%2e/" + testLib + "/" + testVersion + "/testlib.js",
		"/ajax/libs/.hidden/1.0.0/x.js",
		"/ajax/libs/te$tlib/1.0.0/testlib.js",
		"/ajax/libs/" + testLib + "/1.0.0%2f..%2f2.1.0/testlib.js",
		"/ajax/libs/" + testLib + "/" + strings.Repeat("9", 200) + "/testlib.js",
		"/ajax/libs/" + testLib,
		"/ajax/libs/",
		"/ajax/libs",
		"/libraries/..%2f..%2fetc",
		"/libraries/%2e%2e",
		"/libraries/" + testLib + "/..%2f1.0.0",
		"/browse/..%2f..%2f",
		"/browse/" + testLib + "/%2e%2e",
		"/%2e%2e/%2e%2e/etc/passwd",
	}
	for _, p := range paths {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			status, body := rawRequest(t, addr, method, p)
			if status < 400 || status > 499 {
				t.Errorf("%s %.120q: status %d, want 4xx", method, p, status)
			}
			if bytes.Contains(body, []byte("__loaded")) || bytes.Contains(body, []byte("secret")) {
				t.Errorf("%s %.120q: served file content: %.80q", method, p, body)
			}
		}
	}
	// The guard does not reject what it should serve.
	if status, body := rawRequest(t, addr, http.MethodGet, base+"data/info.json"); status != 200 || !bytes.Contains(body, []byte(`"name":"testlib"`)) {
		t.Errorf("legitimate nested path: status %d", status)
	}
}

func TestVersionRedirects(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	cases := map[string]string{
		"latest":         testVersion,
		"2":              "2.1.0",
		"2.0":            "2.0.0",
		"^1":             "1.0.0",
		"~2.0":           "2.0.0",
		"1.x":            "1.0.0",
		"%3E%3D1%20%3C2": "1.0.0",
		"%5E2.0":         "2.1.0",
	}
	for spec, want := range cases {
		t.Run(spec, func(t *testing.T) {
			resp := get(t, fileURL(ts.URL, spec, "data/info.json"), nil)
			if resp.StatusCode != http.StatusFound {
				t.Fatalf("status %d, want 302", resp.StatusCode)
			}
			if got, wantLoc := resp.Header.Get("Location"), "/ajax/libs/testlib/"+want+"/data/info.json"; got != wantLoc {
				t.Errorf("Location %q, want %q", got, wantLoc)
			}
			if got := resp.Header.Get("Cache-Control"); got != "public, max-age=300" {
				t.Errorf("Cache-Control %q on a moving alias", got)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("redirect without CORS header")
			}
		})
	}
	// Exact versions, prereleases included, are served directly and immutably.
	for _, v := range []string{"1.0.0", "3.0.0-beta.1"} {
		resp := get(t, fileURL(ts.URL, v, "testlib.js"), nil)
		if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != immutableCacheControl {
			t.Errorf("%s: status %d, Cache-Control %q", v, resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	}
	// A redirect keeps the query string.
	resp := get(t, fileURL(ts.URL, "2", "testlib.js")+"?v=1", nil)
	if got := resp.Header.Get("Location"); got != "/ajax/libs/testlib/2.1.0/testlib.js?v=1" {
		t.Errorf("Location %q", got)
	}
}

func TestCacheHitHeader(t *testing.T) {
	s, ts, _ := newTestEdge(t, nil)
	u := fileURL(ts.URL, "2.0.0", "testlib.css")
	for i, want := range []string{"primary", "cache", "cache"} {
		resp := get(t, u, map[string]string{"Accept-Encoding": "gzip"})
		if got := resp.Header.Get("X-Edge-Source"); got != want {
			t.Errorf("request %d: X-Edge-Source %q, want %q", i, got, want)
		}
		if got := decode(t, resp.Header.Get("Content-Encoding"), resp.body); string(got) != testLibCSS {
			t.Errorf("request %d: body %q", i, got)
		}
	}
	// Each representation is its own cache entry.
	if got := get(t, u, map[string]string{"Accept-Encoding": "br"}).Header.Get("X-Edge-Source"); got != "primary" {
		t.Errorf("first brotli request: X-Edge-Source %q, want primary", got)
	}
	// Ranges of cached bodies come from the cache too.
	resp := get(t, u, map[string]string{"Range": "bytes=0-4"})
	if resp.Header.Get("X-Edge-Source") != "primary" || string(resp.body) != testLibCSS[:5] {
		t.Errorf("first identity range: source %q body %q", resp.Header.Get("X-Edge-Source"), resp.body)
	}
	if got := get(t, u, map[string]string{"Range": "bytes=1-2"}).Header.Get("X-Edge-Source"); got != "cache" {
		t.Errorf("second identity range: X-Edge-Source %q, want cache", got)
	}
	// Large files are never cached.
	for range 2 {
		if got := get(t, fileURL(ts.URL, "2.0.0", "big.bin"), nil).Header.Get("X-Edge-Source"); got != "primary" {
			t.Errorf("big file: X-Edge-Source %q, want primary", got)
		}
	}
	if entries, used := s.files.Stats(); entries != 3 || used <= int64(len(testLibCSS)) {
		t.Errorf("file cache holds %d entries (%d bytes), want 3", entries, used)
	}
	// With the cache disabled every request reads the bucket.
	_, cold, _ := newTestEdge(t, func(c *Config) { c.CacheBytes = 0 })
	for range 2 {
		if got := get(t, fileURL(cold.URL, "2.0.0", "testlib.css"), nil).Header.Get("X-Edge-Source"); got != "primary" {
			t.Errorf("cache disabled: X-Edge-Source %q, want primary", got)
		}
	}
}

func TestPrecompressedTwinMissingFallsBackToOriginal(t *testing.T) {
	// lostlib's .br objects were deleted from both buckets (see seedFixtures).
	_, ts, logs := newTestEdge(t, nil)
	resp := get(t, ts.URL+"/ajax/libs/lostlib/1.0.0/lost.js", map[string]string{"Accept-Encoding": "br"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || string(resp.body) != lostLibJS {
		t.Fatalf("status %d, encoding %q, body %q", resp.StatusCode, resp.Header.Get("Content-Encoding"), resp.body)
	}
	if want := `"` + sriPrefixHex(transform.SRI([]byte(lostLibJS))) + `"`; resp.Header.Get("ETag") != want {
		t.Errorf("ETag %q, want the identity tag %q", resp.Header.Get("ETag"), want)
	}
	if !strings.Contains(logs.String(), "precompressed representation unavailable") {
		t.Errorf("fallback not logged:\n%s", logs)
	}
	// gzip is intact and still preferred over the original.
	if got := get(t, ts.URL+"/ajax/libs/lostlib/1.0.0/lost.js", map[string]string{"Accept-Encoding": "gzip"}).Header.Get("Content-Encoding"); got != "gzip" {
		t.Errorf("gzip request: Content-Encoding %q", got)
	}
}

func TestReusedFileIsReadWhereItIsStored(t *testing.T) {
	// The pipeline may commit a version whose unchanged files still live
	// under an earlier version's keys (File.StoredAt).
	ctx := t.Context()
	st, b := testEnv.store, testEnv.buckets
	pkg := catalog.Package{Name: "reuselib", Description: "reuses bytes across versions", Filename: "a.js"}
	data := []byte("console.log('stored once');\n")
	if err := publishVersion(ctx, st, b, pkg, "1.0.0", []fixtureFile{{Path: "a.js", Data: data}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	reused := *testVersionDoc(t, "reuselib", "1.0.0")
	reused.Version = "1.1.0"
	reused.Files = slices.Clone(reused.Files)
	reused.Files[0].StoredAt = metadata.FileKey("reuselib", "1.0.0", "a.js")
	if err := objectstore.PutJSON(ctx, st, b.Meta, metadata.VersionKey("reuselib", "1.1.0"), &reused); err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.UpdateJSON(ctx, st, b.Meta, metadata.PackageKey("reuselib"), func(p *metadata.Package, _ bool) (bool, error) {
		p.Versions = append(p.Versions, "1.1.0")
		p.Latest = "1.1.0"
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}

	_, ts, _ := newTestEdge(t, nil)
	for i, c := range []struct{ version, ae, source string }{
		{"1.1.0", "br", "primary"},
		{"1.0.0", "br", "cache"}, // the same object: one cache entry serves both versions
		{"1.1.0", "", "primary"},
	} {
		resp := get(t, ts.URL+"/ajax/libs/reuselib/"+c.version+"/a.js", map[string]string{"Accept-Encoding": c.ae})
		if resp.StatusCode != 200 || string(decode(t, resp.Header.Get("Content-Encoding"), resp.body)) != string(data) {
			t.Fatalf("request %d (%s): status %d body %q", i, c.version, resp.StatusCode, resp.body)
		}
		if got := resp.Header.Get("X-Edge-Source"); got != c.source {
			t.Errorf("request %d (%s, %q): X-Edge-Source %q, want %q", i, c.version, c.ae, got, c.source)
		}
	}
}
