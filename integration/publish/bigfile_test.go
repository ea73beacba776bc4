package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/andybalholm/brotli"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/edge"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// maxWorkerRSS is the most resident memory a worker process may reach
// while it publishes a release with one very large file.
const maxWorkerRSS = 300 << 20

// TestLargeFilePublishes publishes a release with a large generated source
// map (40 MiB; 200 MiB with EDGEFLOW_LARGE_FILE_TEST=1), a font and an
// image through the publish and compress pools run as their own processes,
// as operators run them. The edge then serves the map byte for byte (whole,
// a range, and as brotli), the font and the image as stored, without twins;
// and neither worker's peak resident memory (VmHWM) reached 300 MiB: the
// file was streamed, never held whole.
func TestLargeFilePublishes(t *testing.T) {
	size := int64(40 << 20)
	if os.Getenv("EDGEFLOW_LARGE_FILE_TEST") == "1" {
		size = 200 << 20
	}
	setUpStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	const name, version = "it-bigfile", "1.0.0"
	font := bytes.Repeat([]byte("wOF2\x00\x01\x00\x00 glyphs "), 4000)
	image := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 1, 2, 3}, 1000)...)
	mapSum, tgz := bigRelease(t, size, map[string][]byte{"icons.woff2": font, "logo.png": image, "index.js": []byte("export default 1;\n")})
	npm.Add(name, version, tgz)

	procs := startWorkerProcesses(t)
	pkg := catalog.Package{Name: name, Description: "a release with a large source map", License: "MIT", Filename: "index.js",
		Autoupdate: catalog.Autoupdate{Source: "npm", Target: name, FileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"**"}}}}}
	start := time.Now()
	if _, err := publishOnce(ctx, pkg, version); err != nil {
		t.Fatalf("publish: %v\n%s", err, procs.logs())
	}
	t.Logf("published a %d MiB file in %s", size>>20, time.Since(start).Round(time.Second))
	for _, p := range procs {
		hwm := peakRSS(t, p.cmd.Process.Pid)
		t.Logf("%s worker: peak resident memory %d MiB", p.name, hwm>>20)
		if hwm >= maxWorkerRSS {
			t.Errorf("%s worker: peak resident memory %d MiB, over %d MiB", p.name, hwm>>20, maxWorkerRSS>>20)
		}
	}

	var doc metadata.Version
	if _, err := objectstore.GetJSON(ctx, env.Store, buckets.Meta, metadata.VersionKey(name, version), &doc); err != nil {
		t.Fatal(err)
	}
	f, ok := doc.Lookup("app.js.map")
	if !ok || f.Size != size || f.BrotliSize == 0 || f.GzipSize == 0 || f.BrotliLevel == 0 || len(doc.Skipped) != 0 {
		t.Fatalf("app.js.map in the version document: %+v (found %v), skipped %v", f, ok, doc.Skipped)
	}
	srv := httptest.NewServer(edge.New(edge.Config{Primary: env.Store, Mirror: env.Store, Buckets: buckets}))
	defer srv.Close()
	u := srv.URL + "/ajax/libs/" + name + "/" + version + "/"

	// Whole, streamed through a hash: the bytes the registry shipped.
	for _, enc := range []string{"identity", "br"} {
		sum, n, encoding := streamedSum(t, u+"app.js.map", enc)
		if sum != mapSum || n != size {
			t.Errorf("GET app.js.map (Accept-Encoding %s, got %q): %d bytes, SHA-256 %x, want %d bytes, %x", enc, encoding, n, sum, size, mapSum)
		}
		if want := map[string]string{"identity": "", "br": "br"}[enc]; encoding != want {
			t.Errorf("GET app.js.map (Accept-Encoding %s): Content-Encoding %q", enc, encoding)
		}
	}
	// A range from the middle: exactly those bytes of the generated map.
	from, length := size/2+12345, int64(1<<20)
	want := sliceOfSourceMap(t, size, from, length)
	resp, err := http.DefaultClient.Do(rangeRequest(t, u+"app.js.map", fmt.Sprintf("bytes=%d-%d", from, from+length-1)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, want) {
		t.Errorf("ranged GET: %d, %d bytes, equal %v", resp.StatusCode, len(body), bytes.Equal(body, want))
	}
	// The font and the image: stored without twins, served as stored.
	for path, data := range map[string][]byte{"icons.woff2": font, "logo.png": image} {
		for _, suffix := range []string{metadata.BrotliSuffix, metadata.GzipSuffix} {
			if _, err := env.Store.Stat(ctx, buckets.Files, metadata.FileKey(name, version, path)+suffix); err == nil {
				t.Errorf("%s has a %s twin", path, suffix)
			}
		}
		sum, n, encoding := streamedSum(t, u+path, "br, gzip")
		if sum != sha256.Sum256(data) || n != int64(len(data)) || encoding != "" {
			t.Errorf("GET %s: %d bytes, Content-Encoding %q", path, n, encoding)
		}
	}
}

// bigRelease is an npm tarball holding dist/app.js.map (a source map of
// size bytes, generated as it is packed) and the other files, and the
// map's SHA-256.
func bigRelease(t *testing.T, size int64, others map[string][]byte) ([sha256.Size]byte, []byte) {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	add := func(name string, size int64, write func(io.Writer) error) {
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if err := write(tw); err != nil {
			t.Fatal(err)
		}
	}
	add("package.json", 20, func(w io.Writer) error { _, err := io.WriteString(w, `{"version":"1.0.0"} `); return err })
	h := sha256.New()
	add("dist/app.js.map", size, func(w io.Writer) error { return benchdata.SourceMap(io.MultiWriter(w, h), 1, size) })
	for name, data := range others {
		add("dist/"+name, int64(len(data)), func(w io.Writer) error { _, err := w.Write(data); return err })
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum, buf.Bytes()
}

// sliceOfSourceMap generates the source map again and keeps length bytes
// from offset.
func sliceOfSourceMap(t *testing.T, size, offset, length int64) []byte {
	t.Helper()
	w := &window{from: offset, to: offset + length}
	if err := benchdata.SourceMap(w, 1, size); err != nil {
		t.Fatal(err)
	}
	return w.kept
}

// window keeps the bytes written at offsets [from, to).
type window struct {
	from, to, at int64
	kept         []byte
}

func (w *window) Write(p []byte) (int, error) {
	start, end := max(w.from, w.at), min(w.to, w.at+int64(len(p)))
	if start < end {
		w.kept = append(w.kept, p[start-w.at:end-w.at]...)
	}
	w.at += int64(len(p))
	return len(p), nil
}

// streamedSum GETs u and hashes the body as it arrives, decoded (brotli)
// when the edge sent it encoded: never the whole body in memory.
func streamedSum(t *testing.T, u, acceptEncoding string) ([sha256.Size]byte, int64, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", acceptEncoding)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", u, resp.StatusCode)
	}
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "br" {
		body = brotli.NewReader(resp.Body)
	}
	h := sha256.New()
	n, err := io.Copy(h, body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum, n, resp.Header.Get("Content-Encoding")
}

func rangeRequest(t *testing.T, u, rng string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Range", rng)
	return req
}

// workerProcess is a worker pool's binary running for the test.
type workerProcess struct {
	name string
	cmd  *exec.Cmd
	out  *testenv.SyncBuffer
}

type workerProcesses []*workerProcess

func (ps workerProcesses) logs() string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "--- %s worker:\n%s\n", p.name, p.out.String())
	}
	return b.String()
}

// startWorkerProcesses builds the publish and compress pools and runs
// them, with the test's stores and registry, until the test ends.
func startWorkerProcesses(t *testing.T) workerProcesses {
	t.Helper()
	dir := t.TempDir()
	scratch := t.TempDir()
	environ := append(os.Environ(),
		"TEMPORAL_ADDRESS="+env.Temporal.HostPort, "S3_ENDPOINT="+env.MinIO.Endpoint,
		"S3_ACCESS_KEY="+env.MinIO.AccessKey, "S3_SECRET_KEY="+env.MinIO.SecretKey,
		"BUCKET_FILES="+buckets.Files, "BUCKET_MIRROR="+buckets.Mirror, "BUCKET_META="+buckets.Meta,
		"BUCKET_MIRROR_META="+buckets.MirrorMeta, "BUCKET_INCOMING="+buckets.Incoming,
		"NPM_REGISTRY="+npm.URL, "GITHUB_API="+npm.URL, "CATALOG_DIR="+t.TempDir(),
		"HEALTH_ADDR=127.0.0.1:0", "TMPDIR="+scratch)
	var procs workerProcesses
	started := regexp.MustCompile(`msg="worker started"`)
	for _, pool := range []string{"publish", "compress"} {
		bin, err := testenv.BuildCommand(dir, "./workers/"+pool)
		if err != nil {
			t.Fatal(err)
		}
		p := &workerProcess{name: pool, cmd: exec.Command(bin), out: &testenv.SyncBuffer{}}
		p.cmd.Env = environ
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = p.cmd.Process.Signal(syscall.SIGINT)
			done := make(chan struct{})
			go func() { _ = p.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = p.cmd.Process.Kill()
				<-done
			}
		})
		procs = append(procs, p)
		eventually(t, time.Minute, "the "+pool+" worker starts", func() (bool, string) {
			return started.MatchString(p.out.String()), p.out.String()
		})
	}
	return procs
}

// peakRSS is a process's peak resident set size (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("peak memory of process %d: %v", pid, err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
