//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/edgeflow/edgeflow/integration/e2echeck"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// poller reads the edge the way a user would while versions publish: a
// version the edge lists must serve every file it names with the bytes its
// SRI describes, from the moment it is first listed and from then on.
type poller struct {
	edge    string
	names   []string
	version string
	stopCh  chan struct{}
	done    chan pollResult
	shown   atomic.Int64
}

type pollResult struct {
	requests, versionsChecked, filesChecked int64
	halfPublished                           int
	problems                                []string
}

func startPoller(edge string, names []string, version string) *poller {
	p := &poller{edge: edge, names: names, version: version, stopCh: make(chan struct{}), done: make(chan pollResult, 1)}
	go p.run()
	return p
}

// visible is how many versions the poller has seen listed so far.
func (p *poller) visible() int { return int(p.shown.Load()) }

func (p *poller) stop() pollResult {
	close(p.stopCh)
	return <-p.done
}

var encodings = []string{"identity", "gzip", "br"}

func (p *poller) run() {
	var r pollResult
	seen := map[string]bool{}
	round := 0
	problem := func(format string, args ...any) {
		r.halfPublished++
		if len(r.problems) < 20 {
			r.problems = append(r.problems, fmt.Sprintf(format, args...))
		}
	}
	for {
		select {
		case <-p.stopCh:
			p.done <- r
			return
		default:
		}
		round++
		for i, name := range p.names {
			r.requests++
			status, assets, err := e2echeck.VersionAssets(p.edge, name, p.version)
			switch {
			case err != nil:
				// The edge itself never goes away here; an error is worth a look.
				if len(r.problems) < 20 {
					r.problems = append(r.problems, fmt.Sprintf("%s@%s: %v", name, p.version, err))
				}
				continue
			case status == http.StatusNotFound:
				if seen[name] {
					problem("%s@%s was listed, then gone", name, p.version)
				}
				continue
			}
			// The first sight checks every file; later rounds one of them,
			// in turn, each in turn in another encoding.
			files := assets.Files
			if seen[name] {
				files = files[(round+i)%len(files) : (round+i)%len(files)+1]
			} else {
				seen[name] = true
				p.shown.Add(1)
				r.versionsChecked++
			}
			for j, path := range files {
				r.requests++
				enc := encodings[(round+i+j)%len(encodings)]
				body, err := e2echeck.FetchFile(p.edge, name, p.version, path, enc)
				if err != nil {
					problem("%s@%s is listed but %s (%s) is not served: %v", name, p.version, path, enc, err)
					continue
				}
				if transform.SRI(body) != assets.SRI[path] {
					problem("%s@%s is listed but %s (%s) does not match its SRI", name, p.version, path, enc)
					continue
				}
				r.filesChecked++
			}
		}
	}
}

type tally struct{ verified, lost int64 }

// verifyPublished checks, on both stores directly, every version: listed
// once in its package, its document mirrored byte for byte, every file's
// bytes matching its SRI and size, and each .br and .gz decoding to them;
// and that exactly one run published it.
func verifyPublished(t *testing.T, names []string, version string) tally {
	t.Helper()
	ctx := context.Background()
	b := publishBuckets
	var c tally
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		c.lost++
	}
	for _, name := range names {
		var doc metadata.Package
		if _, err := objectstore.GetJSON(ctx, env.primaryStore, b.Meta, metadata.PackageKey(name), &doc); err != nil {
			fail("%s: package document: %v", name, err)
			continue
		}
		if strings.Join(doc.Versions, ",") != version {
			fail("%s lists versions %v, want %s once", name, doc.Versions, version)
		}
		primaryDoc, _, err := objectstore.ReadAll(ctx, env.primaryStore, b.Meta, metadata.VersionKey(name, version))
		if err != nil {
			fail("%s@%s: version document: %v", name, version, err)
			continue
		}
		if mirrorDoc, _, err := objectstore.ReadAll(ctx, env.mirrorStore, b.MirrorMeta, metadata.VersionKey(name, version)); err != nil || !bytes.Equal(mirrorDoc, primaryDoc) {
			fail("%s@%s: the mirror's version document differs or is missing (%v)", name, version, err)
		} else {
			c.verified++
		}
		var v metadata.Version
		if err := json.Unmarshal(primaryDoc, &v); err != nil {
			fail("%s@%s: version document: %v", name, version, err)
			continue
		}
		for _, file := range v.Files {
			key := metadata.FileKey(name, version, file.Path)
			for _, side := range []struct {
				store  objectstore.Store
				bucket string
			}{{env.primaryStore, b.Files}, {env.mirrorStore, b.Mirror}} {
				data, _, err := objectstore.ReadAll(ctx, side.store, side.bucket, key)
				if err != nil || int64(len(data)) != file.Size || transform.SRI(data) != file.SRI {
					fail("%s/%s: missing, or not the bytes of its SRI and size (%v)", side.bucket, key, err)
					continue
				}
				c.verified++
				for _, rep := range []struct {
					suffix, encoding string
					size             int64
				}{{".br", "br", file.BrotliSize}, {".gz", "gzip", file.GzipSize}} {
					if rep.size == 0 {
						continue
					}
					packed, _, err := objectstore.ReadAll(ctx, side.store, side.bucket, key+rep.suffix)
					if err == nil {
						var plain []byte
						if plain, err = e2echeck.Decode(rep.encoding, packed); err == nil && !bytes.Equal(plain, data) {
							err = fmt.Errorf("decodes to other bytes")
						}
					}
					if err != nil || int64(len(packed)) != rep.size {
						fail("%s/%s%s: %v (size %d, document says %d)", side.bucket, key, rep.suffix, err, len(packed), rep.size)
						continue
					}
					c.verified++
				}
			}
		}
	}
	c.lost += publishedOnce(t, names, version)
	return c
}

// publishedOnce counts, per version, the completed runs that published it
// (not the ones that found it already published): exactly one each. It
// returns how many versions had another count.
func publishedOnce(t *testing.T, names []string, version string) int64 {
	t.Helper()
	ctx := context.Background()
	var counts map[string]int
	eventually(t, time.Minute, "every version's publishing run visible", func() (bool, string) {
		counts = map[string]int{}
		var token []byte
		for {
			resp, err := env.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Query: `WorkflowType = "` + contract.WorkflowTypePublishVersion + `" AND ExecutionStatus = "Completed"`, NextPageToken: token})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range resp.Executions {
				var out contract.PublishOutput
				if err := env.client.GetWorkflow(ctx, e.Execution.WorkflowId, e.Execution.RunId).Get(ctx, &out); err != nil {
					return false, err.Error()
				}
				if out.Result != nil && !out.AlreadyPublished {
					counts[e.Execution.WorkflowId]++
				}
			}
			if token = resp.NextPageToken; len(token) == 0 {
				break
			}
		}
		for _, name := range names {
			if counts[contract.PublishVersionWorkflowID(name, version)] == 0 {
				return false, "no publishing run yet for " + name
			}
		}
		return true, ""
	})
	var wrong int64
	for _, name := range names {
		if n := counts[contract.PublishVersionWorkflowID(name, version)]; n != 1 {
			t.Errorf("%s@%s published by %d runs, want exactly one", name, version, n)
			wrong++
		}
	}
	return wrong
}

// mirrorTakesOver stops the primary MinIO and reads every version and file
// from the edge, which must answer from the mirror; then it starts the
// primary again (same port, same data) for the suites after it.
func mirrorTakesOver(t *testing.T, edge string, names []string, version string) (served, wrong, requests int64) {
	t.Helper()
	endpoint := env.primary.Endpoint
	if err := env.primary.Stop(30 * time.Second); err != nil {
		t.Fatalf("stop the primary MinIO: %v", err)
	}
	defer restartPrimary(t, endpoint)
	for _, name := range names {
		// An absence the edge remembers from before the version existed is
		// answered once more while it refreshes (by design): ask until a
		// deadline, as a client retrying would.
		var a e2echeck.Assets
		var status int
		var err error
		for deadline := time.Now().Add(15 * time.Second); ; {
			requests++
			status, a, err = e2echeck.VersionAssets(edge, name, version)
			if (err == nil && status == http.StatusOK) || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("the edge answered %d", status)
		}
		if err != nil {
			t.Errorf("%s@%s with the primary down: %v", name, version, err)
			wrong++
			continue
		}
		for i, path := range a.Files {
			requests++
			body, err := e2echeck.FetchFile(edge, name, version, path, encodings[i%len(encodings)])
			if err != nil || transform.SRI(body) != a.SRI[path] {
				t.Errorf("%s@%s/%s with the primary down: %v", name, version, path, err)
				wrong++
				continue
			}
			served++
		}
	}
	return served, wrong, requests
}

func restartPrimary(t *testing.T, endpoint string) {
	t.Helper()
	var port int
	if _, err := fmt.Sscanf(endpoint[strings.LastIndex(endpoint, ":")+1:], "%d", &port); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := devstack.StartMinIO(ctx, devstack.MinIOOptions{DataDir: env.dir + "/primary", Port: port,
		AccessKey: env.primary.AccessKey, SecretKey: env.primary.SecretKey, Logs: env.logs})
	if err != nil {
		t.Fatalf("restart the primary MinIO on %s: %v", endpoint, err)
	}
	env.mu.Lock()
	env.primary = m
	env.mu.Unlock()
}
