package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/testenv/loadtest"
)

// BenchmarkEdgeOutOfProcess measures the edge as users deploy it (issue
// #37): the edge (cmd/edge, built here) as its own process on the test
// MinIO, serving a version the publish pipeline published, with its files
// hot in the edge's cache; against nginx (Debian's, one worker, sendfile,
// gzip_static and, with Debian's libnginx-mod-http-brotli-static,
// brotli_static) serving the same files and their .gz/.br twins from local
// disk under the same URLs. One load generator process (loadtest's:
// edgeBenchWorkers closed-loop workers on keep-alive connections, each
// asking for the files in turn) drives both, once without Accept-Encoding,
// once with gzip and once with br; rounds alternate between the targets in
// a rotating order, edgeBenchRounds each. Reported per encoding are the
// medians of req/s, p99 and each server's CPU time per request (its
// processes' user + system time over a round, over the requests of the
// round), edge/nginx (the ratio of the req/s medians), added_p99_ms (the
// edge's p99 median minus nginx's) and cpu-nginx/edge (nginx's CPU per
// request over the edge's: how the two compare when neither waits for a
// core, which a machine shared with other work makes req/s say poorly).
//
// The targets' pair is one core each: nginx's one worker, and the edge
// with GOMAXPROCS=1 (otherwise, on a 2-core machine, the edge would run
// on both cores where nginx has one, and share them with the load
// generator). The pair as deployed by default, edge-auto (GOMAXPROCS
// unset: one per core) and nginx-auto (worker_processes auto, Debian's
// default), gives informational rows: edge-auto/nginx-auto,
// auto-added_p99_ms and cpu-nginx-auto/edge-auto.
func BenchmarkEdgeOutOfProcess(b *testing.B) {
	startWorkersB(b)
	dir := b.TempDir()
	loadgen, err := loadtest.BuildLoadgen(dir)
	if err != nil {
		b.Fatal(err)
	}
	name := fmt.Sprintf("edgebench%d", benchSeq.Add(1))
	paths := publishHotFiles(b, name)
	servers := []*benchServer{startEdgeProcess(b, "edge", "GOMAXPROCS=1"), startEdgeProcess(b, "edge-auto")}
	nginxBrotli := false
	if bin := loadtest.NginxBinary(); bin == "" {
		b.Log("nginx is not installed (`make bench` installs Debian's): edge rows only")
	} else {
		www := filepath.Join(dir, "www")
		exportPublished(b, name, paths, www)
		servers = append(servers, startStaticNginx(b, bin, www, "nginx", "1"), startStaticNginx(b, bin, www, "nginx-auto", "auto"))
		nginxBrotli = loadtest.NginxModule(brotliStaticModule) != ""
		if !nginxBrotli {
			b.Log("Debian's libnginx-mod-http-brotli-static is not installed: nginx answers br requests with identity, which the br rows compare with")
		}
	}
	type target struct {
		*benchServer
		enc  string
		runs []loadtest.Result
	}
	var targets []*target
	for _, enc := range []string{"identity", "gzip", "br"} {
		for _, s := range servers {
			targets = append(targets, &target{benchServer: s, enc: enc})
		}
	}
	// Each server's encoding for a request, checked on every file before
	// the rounds (which also makes the files hot in the edge's cache) and
	// counted in every round.
	want := func(t *target) string {
		switch {
		case t.enc == "identity", t.enc == "br" && t.nginx && !nginxBrotli:
			return ""
		}
		return t.enc
	}
	for _, t := range targets {
		for _, p := range paths {
			checkEncodingServed(b, t.base+p, t.enc, want(t), filepath.Join(dir, "www", filepath.FromSlash(p)))
		}
	}
	for _, s := range servers {
		if err := s.findPIDs(); err != nil {
			b.Fatal(err)
		}
	}

	for b.Loop() {
		for _, t := range targets {
			t.runs = nil
		}
		for round := range edgeBenchRounds {
			for i := range targets {
				t := targets[(i+round)%len(targets)]
				load := loadtest.Load{Workers: edgeBenchWorkers, Duration: edgeBenchDuration, Warmup: edgeBenchWarmup}
				for _, p := range paths {
					load.URLs = append(load.URLs, t.base+p)
				}
				if t.enc != "identity" {
					load.Headers = []string{"Accept-Encoding: " + t.enc}
				}
				r, err := loadtest.RunMeasured(loadgen, dir, t.name+"-"+t.enc, load, t.pids)
				if err != nil {
					b.Fatal(err)
				}
				if r.Errors > 0 || r.Requests == 0 || r.Statuses[http.StatusOK] != r.Requests || r.Encodings[want(t)] != r.Requests {
					b.Fatalf("%s %s: %d requests, %d errors (%s), statuses %v, encodings %v, want every one 200 %q",
						t.name, t.enc, r.Requests, r.Errors, r.FirstError, r.Statuses, r.Encodings, want(t))
				}
				t.runs = append(t.runs, r)
			}
		}
	}

	byKey := map[string]*target{}
	for _, t := range targets {
		byKey[t.name+"-"+t.enc] = t
		b.ReportMetric(loadtest.Median(t.runs, loadtest.PerSecond), t.enc+"-"+t.name+"-req/s")
		b.ReportMetric(loadtest.Median(t.runs, loadtest.P99), t.enc+"-"+t.name+"-p99_ms")
		b.ReportMetric(loadtest.Median(t.runs, loadtest.CPUMicros), t.enc+"-"+t.name+"-cpu_us/req")
	}
	// One line per encoding: the benchmark's log keeps 10 lines.
	for _, enc := range []string{"identity", "gzip", "br"} {
		line := enc + ":"
		for _, s := range servers {
			if t := byKey[s.name+"-"+enc]; t != nil {
				line += fmt.Sprintf(" %s req/s %.0f p99 ms %.1f cpu µs/req %.1f;", s.name, loadtest.Values(t.runs, loadtest.PerSecond),
					loadtest.Values(t.runs, loadtest.P99), loadtest.Values(t.runs, loadtest.CPUMicros))
			}
		}
		b.Log(line)
	}
	// The targets compare the edge with nginx, a core each; the pair as
	// deployed by default is informational. prefix names a pair's rows
	// after the encoding: "" for the targets' pair.
	pairs := []struct{ edge, nginx, prefix string }{{"edge", "nginx", ""}, {"edge-auto", "nginx-auto", "auto-"}}
	for _, enc := range []string{"identity", "gzip", "br"} {
		for _, pair := range pairs {
			e, n := byKey[pair.edge+"-"+enc], byKey[pair.nginx+"-"+enc]
			if e == nil || n == nil {
				continue
			}
			b.ReportMetric(loadtest.Median(e.runs, loadtest.PerSecond)/loadtest.Median(n.runs, loadtest.PerSecond), enc+"-"+pair.edge+"/"+pair.nginx)
			b.ReportMetric(loadtest.Median(e.runs, loadtest.P99)-loadtest.Median(n.runs, loadtest.P99), enc+"-"+pair.prefix+"added_p99_ms")
			b.ReportMetric(loadtest.Median(n.runs, loadtest.CPUMicros)/loadtest.Median(e.runs, loadtest.CPUMicros), enc+"-cpu-"+pair.nginx+"/"+pair.edge)
		}
	}
}

// benchServer is one server BenchmarkEdgeOutOfProcess measures: its base
// URL and the processes whose CPU time it counts.
type benchServer struct {
	name, base string
	nginx      bool
	// findPIDs sets pids once the server answers (nginx forks its workers
	// after it listens).
	findPIDs func() error
	pids     []int
}

const (
	edgeBenchWorkers  = 16
	edgeBenchRounds   = 3
	edgeBenchDuration = 3 * time.Second
	edgeBenchWarmup   = 500 * time.Millisecond
	// edgeBenchFiles files of 1 to 100 KiB, a fifth of them CSS.
	edgeBenchFiles     = 50
	brotliStaticModule = "ngx_http_brotli_static_module"
)

// publishHotFiles publishes version 1.0.0 of name through the pipeline:
// edgeBenchFiles files of 1 to 100 KiB. It returns their edge paths: the
// published files of that size with both compressed twins (the minified
// copies the pipeline adds included).
func publishHotFiles(b *testing.B, name string) []string {
	files := map[string][]byte{}
	for i := range edgeBenchFiles {
		size := 1<<10 + i*(99<<10)/(edgeBenchFiles-1)
		if i%5 == 4 {
			files[fmt.Sprintf("css/style-%02d.css", i)] = benchdata.CSS(uint64(i), size)
		} else {
			files[fmt.Sprintf("js/module-%02d.js", i)] = benchdata.JS(uint64(i), size)
		}
	}
	pkg := benchPackage(name)
	pkg.Filename = "js/module-00.js"
	npm.Add(name, "1.0.0", tarballOf(files))
	publishB(b, pkg, "1.0.0")
	var doc metadata.Version
	if _, err := objectstore.GetJSON(context.Background(), env.Store, buckets.Meta, metadata.VersionKey(name, "1.0.0"), &doc); err != nil {
		b.Fatal(err)
	}
	var paths []string
	for _, f := range doc.Files {
		if f.Size >= 1<<10 && f.Size <= 100<<10 && f.GzipSize > 0 && f.BrotliSize > 0 {
			paths = append(paths, "/ajax/libs/"+name+"/1.0.0/"+f.Path)
		}
	}
	if len(paths) < edgeBenchFiles/2 {
		b.Fatalf("only %d of the %d published files are of 1-100 KiB with both twins", len(paths), len(doc.Files))
	}
	b.Logf("%d published files of 1-100 KiB with .br and .gz twins", len(paths))
	return paths
}

// exportPublished writes the published files of paths and their twins,
// read from the Files bucket where the version document says they are
// stored, into www under their edge paths: what nginx serves.
func exportPublished(b *testing.B, name string, paths []string, www string) {
	ctx := context.Background()
	var doc metadata.Version
	if _, err := objectstore.GetJSON(ctx, env.Store, buckets.Meta, metadata.VersionKey(name, "1.0.0"), &doc); err != nil {
		b.Fatal(err)
	}
	prefix := "/ajax/libs/" + name + "/1.0.0/"
	for _, p := range paths {
		f, ok := doc.Lookup(p[len(prefix):])
		if !ok {
			b.Fatalf("%s is not in the version document", p)
		}
		for _, suffix := range []string{"", metadata.GzipSuffix, metadata.BrotliSuffix} {
			data, _, err := objectstore.ReadAll(ctx, env.Store, buckets.Files, f.Key(name, "1.0.0")+suffix)
			if err != nil {
				b.Fatal(err)
			}
			local := filepath.Join(www, filepath.FromSlash(p)+suffix)
			if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(local, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// startEdgeProcess runs cmd/edge on the test MinIO and buckets, with its
// defaults (metrics on, tracing off, info logs) and extraEnv, until the
// benchmark ends.
func startEdgeProcess(b *testing.B, name string, extraEnv ...string) *benchServer {
	bins := buildBinaries(b, "./cmd/edge")
	stack := append(os.Environ(), "S3_ENDPOINT="+env.MinIO.Endpoint,
		"S3_ACCESS_KEY="+env.MinIO.AccessKey, "S3_SECRET_KEY="+env.MinIO.SecretKey,
		"BUCKET_FILES="+buckets.Files, "BUCKET_MIRROR="+buckets.Mirror, "BUCKET_META="+buckets.Meta,
		"BUCKET_MIRROR_META="+buckets.MirrorMeta, "BUCKET_INCOMING="+buckets.Incoming,
		"EDGE_ADDR=127.0.0.1:0", "EDGE_METRICS_ADDR=127.0.0.1:0")
	logs, pid := runProcessPID(b, filepath.Join(bins, "edge"), append(stack, extraEnv...))
	listening := regexp.MustCompile(`msg="edge listening" .*?addr=(127\.0\.0\.1:\d+)`)
	var url string
	eventually(b, 30*time.Second, "the edge listens", func() (bool, string) {
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			url = "http://" + m[1]
			return true, ""
		}
		return false, logs.String()
	})
	s := &benchServer{name: name, base: url, pids: []int{pid}}
	s.findPIDs = func() error { return nil }
	return s
}

// staticNginxConf serves the exported files as a static origin of a CDN
// is usually set up: sendfile, the precompressed twins, far-future caching
// and open CORS.
const staticNginxConf = `%[1]s
%[2]s
events { worker_connections 4096; }
http {
	access_log off;
	%[3]s
	sendfile on;
	tcp_nopush on;
	keepalive_requests 1000000;
	types { application/javascript js; text/css css; }
	default_type application/octet-stream;
	charset utf-8;
	charset_types application/javascript text/css;
	server {
		listen 127.0.0.1:%[4]d;
		root %[5]s;
		gzip_static on;
		gzip_vary on;
		%[6]s
		add_header Cache-Control "public, max-age=31536000, immutable";
		add_header Access-Control-Allow-Origin "*";
	}
}
`

// startStaticNginx runs nginx serving www with worker_processes workers
// until the benchmark ends.
func startStaticNginx(b *testing.B, bin, www, name, workers string) *benchServer {
	dir, err := os.MkdirTemp("", "edge-bench-nginx-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	loadModule, brotli := "", ""
	if mod := loadtest.NginxModule(brotliStaticModule); mod != "" {
		loadModule, brotli = "load_module "+mod+";", "brotli_static on;"
	}
	main, httpPaths := loadtest.NginxPreambleWorkers(dir, workers)
	ports, err := loadtest.StartNginx(b, bin, dir, 1, func(ports []int) []byte {
		return fmt.Appendf(nil, staticNginxConf, main, loadModule, httpPaths, ports[0], www, brotli)
	})
	if err != nil {
		b.Fatal(err)
	}
	s := &benchServer{name: name, base: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), nginx: true}
	s.findPIDs = func() (err error) {
		s.pids, err = loadtest.NginxWorkers(dir)
		return err
	}
	return s
}

// checkEncodingServed asks url for a file with Accept-Encoding enc ("identity":
// none) and fails unless it is served with Content-Encoding want and the
// bytes of local (+ .gz or .br for a compressed answer).
func checkEncodingServed(b *testing.B, url, enc, want, local string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	if enc != "identity" {
		req.Header.Set("Accept-Encoding", enc)
	}
	resp, err := rawHTTP.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	if got := resp.Header.Get("Content-Encoding"); resp.StatusCode != http.StatusOK || got != want {
		b.Fatalf("GET %s (Accept-Encoding %s): %d, Content-Encoding %q, want 200 %q", url, enc, resp.StatusCode, got, want)
	}
	switch want {
	case "gzip":
		local += metadata.GzipSuffix
	case "br":
		local += metadata.BrotliSuffix
	}
	if exported, err := os.ReadFile(local); err == nil && !bytes.Equal(body, exported) {
		b.Fatalf("GET %s (Accept-Encoding %s): %d bytes that are not the published %s", url, enc, len(body), local)
	}
}

// rawHTTP neither decompresses nor shares the default client's pool.
var rawHTTP = &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 30 * time.Second}
