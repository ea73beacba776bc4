//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/integration/e2echeck"
	"github.com/edgeflow/edgeflow/internal/faultproxy"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

var publishBuckets = metadata.Buckets{Files: "chaos-files", Mirror: "chaos-mirror", Meta: "chaos-meta",
	MirrorMeta: "chaos-mirror-meta", Incoming: "chaos-incoming"}

// publishFaults are what the S3 proxies in front of both stores inject.
var publishFaults = faultproxy.Faults{SlowDown: 0.03, Reset: 0.01, Spike: 0.03, SpikeDelay: 400 * time.Millisecond}

const publishVersion = "1.0.0"

// TestPublishUnderFaults publishes packages from a local registry while
// worker processes of both pools are killed, the Temporal dev server is
// restarted, and the S3 proxies in front of both stores fail requests;
// then it checks every version, file and representation, what a poller saw
// through the edge all along, and the edge serving from the mirror with the
// primary store gone.
func TestPublishUnderFaults(t *testing.T) {
	f, recordFigures := startFigures(t, "publish")
	defer recordFigures()
	ctx := context.Background()
	packages, kills := 20, 12
	if *soak {
		packages, kills = 60, 40
	}

	// The registry, the catalog the workers read, and the buckets.
	npm := registrytest.New()
	defer npm.Close()
	catalogDir := t.TempDir()
	var names []string
	for i := range packages {
		name := fmt.Sprintf("chaos-lib-%02d", i)
		names = append(names, name)
		files := benchdata.Package(uint64(1000+i), 10, 48<<10)
		npm.Add(name, publishVersion, e2echeck.TarballOf(files))
		if err := e2echeck.WriteCatalogEntry(catalogDir, e2echeck.SamplePackage(name, "chaos", files)); err != nil {
			t.Fatal(err)
		}
	}
	b := publishBuckets
	if err := objectstore.EnsureBuckets(ctx, env.primaryStore, b.Files, b.Meta, b.Incoming); err != nil {
		t.Fatal(err)
	}
	if err := objectstore.EnsureBuckets(ctx, env.mirrorStore, b.Mirror, b.MirrorMeta); err != nil {
		t.Fatal(err)
	}

	// Every worker reaches both stores through a fault proxy.
	primaryProxy := faultproxy.New(env.primary.Endpoint, publishFaults, 11)
	defer primaryProxy.Close()
	mirrorProxy := faultproxy.New(env.mirror.Endpoint, publishFaults, 12)
	defer mirrorProxy.Close()
	workerEnv := append(bucketEnv(b),
		"TEMPORAL_ADDRESS="+env.temporal.HostPort, "LOG_FORMAT=json", "HEALTH_ADDR=127.0.0.1:0",
		"S3_ENDPOINT="+primaryProxy.Endpoint, "S3_ACCESS_KEY="+env.primary.AccessKey, "S3_SECRET_KEY="+env.primary.SecretKey,
		"MIRROR_S3_ENDPOINT="+mirrorProxy.Endpoint, "MIRROR_S3_ACCESS_KEY="+env.mirror.AccessKey, "MIRROR_S3_SECRET_KEY="+env.mirror.SecretKey,
		"CATALOG_DIR="+catalogDir, "NPM_REGISTRY="+npm.URL, "GITHUB_API="+npm.URL)
	var pools []*proc
	for i := range 2 {
		pools = append(pools,
			supervise(t, fmt.Sprintf("publish-%d", i), env.bins["publish"], append(workerEnv, "MAX_ACTIVITIES=8")),
			supervise(t, fmt.Sprintf("compress-%d", i), env.bins["compress"], append(workerEnv, "MAX_ACTIVITIES=4", "COMPRESS_CPUS=1")))
	}

	// The edge reads the stores directly: what it serves is what was stored.
	edgeProc := supervise(t, "edge", env.bins["edge"], append(bucketEnv(b),
		"EDGE_ADDR=127.0.0.1:0", "EDGE_METRICS_ADDR=127.0.0.1:0", "EDGE_CACHE_MIB=0", "EDGE_META_TTL=300ms", "EDGE_PRIMARY_TIMEOUT=5s", "EDGE_META_TIMEOUT=3s",
		"S3_ENDPOINT="+env.primary.Endpoint, "S3_ACCESS_KEY="+env.primary.AccessKey, "S3_SECRET_KEY="+env.primary.SecretKey,
		"MIRROR_S3_ENDPOINT="+env.mirror.Endpoint, "MIRROR_S3_ACCESS_KEY="+env.mirror.AccessKey, "MIRROR_S3_SECRET_KEY="+env.mirror.SecretKey))
	edge := "http://" + edgeProc.logMatch(t, regexp.MustCompile(`msg="edge listening".* addr=(127\.0\.0\.1:\d+)`), time.Minute)

	watch := startPoller(edge, names, publishVersion)

	// The check that finds the new versions and waits for them all.
	checkStarted := time.Now()
	updatesID := fmt.Sprintf("chaos-updates-%d", time.Now().UnixNano())
	if _, err := env.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: updatesID, TaskQueue: contract.TaskQueue},
		contract.WorkflowTypePackageUpdates, contract.UpdatesInput{Only: names, Wait: true}); err != nil {
		t.Fatal(err)
	}
	killCap := kills
	stopKilling := make(chan struct{})
	killed := killer(pools, 4*time.Second, 7, stopKilling)

	// The dev server restarts once the run is under way: a few versions out.
	eventually(t, 5*time.Minute, "a few versions visible on the edge before the restart", func() (bool, string) {
		n := watch.visible()
		return n >= 3, fmt.Sprintf("%d visible", n)
	})
	env.restartTemporal(t)
	restarts := 1

	var stats contract.UpdatesStats
	eventually(t, 12*time.Minute, "the check ends", func() (bool, string) {
		if total := 0; true {
			for _, p := range pools {
				total += p.Kills()
			}
			if total >= kills {
				select {
				case <-stopKilling:
				default:
					close(stopKilling)
				}
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		err := env.client.GetWorkflow(wctx, updatesID, "").Get(wctx, &stats)
		return err == nil, fmt.Sprint(err)
	})
	select {
	case <-stopKilling:
	default:
		close(stopKilling)
	}
	kills = <-killed
	checkTook := time.Since(checkStarted)
	// The poller reads on until it has seen every version once.
	eventually(t, time.Minute, "the poller sees every version", func() (bool, string) {
		return watch.visible() == len(names), fmt.Sprintf("%d of %d", watch.visible(), len(names))
	})
	primaryProxy.SetFaults(faultproxy.Faults{})
	mirrorProxy.SetFaults(faultproxy.Faults{})
	seen := watch.stop()
	proxied := primaryProxy.Counts()
	mirrored := mirrorProxy.Counts()

	f.faults = int64(kills+restarts) + proxied.Faults() + mirrored.Faults()
	f.note("%d worker processes killed with SIGKILL (2 publish, 2 compress, one every 2–6 s until %d kills or the end; %d process starts in all); the Temporal dev server restarted %d time(s) mid-run", kills, killCap, startsOf(pools), restarts)
	f.note("S3 proxies: primary %d requests, %d SlowDown, %d reset, %d latency spikes; mirror %d requests, %d SlowDown, %d reset, %d spikes",
		proxied.Requests, proxied.SlowDowns, proxied.Resets, proxied.Spikes, mirrored.Requests, mirrored.SlowDowns, mirrored.Resets, mirrored.Spikes)
	f.operations = int64(len(names)) + proxied.Requests + mirrored.Requests + seen.requests
	if stats.Published != len(names) || stats.Failed != 0 {
		t.Errorf("the check: %+v; want %d published, none failed", stats, len(names))
	}
	f.note("the check: %d new versions, %d published, %d failed, in %s", stats.NewVersions, stats.Published, stats.Failed, checkTook.Round(time.Second))

	// Every version exactly once; every file, on both stores, as its SRI says.
	v := verifyPublished(t, names, publishVersion)
	f.verified += v.verified
	f.lost += v.lost
	f.note("%d versions published exactly once; %d stored files and representations checked (SHA-512 against the SRI, .br and .gz decoded), %d wrong", len(names), v.verified, v.lost)

	// What the poller saw through the edge while all of it happened.
	f.verified += seen.filesChecked
	f.lost += int64(seen.halfPublished)
	f.note("a poller read the edge %d times while the run went on: %d versions checked with all their files the moment they were listed, then one file a round (%d file checks in all), %d seen half-published or gone again",
		seen.requests, seen.versionsChecked, seen.filesChecked, seen.halfPublished)
	for _, p := range seen.problems {
		t.Errorf("poller: %s", p)
	}

	// Hostile requests to the edge, while it serves.
	hostile, held, broke := hostileHTTP(t, edge, names[0], publishVersion, first(seenFiles(t, edge, names[0])))
	f.operations += hostile
	f.verified += held
	f.lost += broke
	f.note("hostile HTTP to the edge (traversal, a 200 KiB header, an 8 MiB POST, a client stalling in its headers, one never reading): %d cases held, %d did not", held, broke)

	// The primary store goes away: the edge answers from the mirror.
	served, wrong, requests := mirrorTakesOver(t, edge, names, publishVersion)
	f.faults++
	f.operations += requests
	f.verified += served
	f.lost += wrong
	f.note("primary MinIO stopped: the edge served %d files from the mirror, %d wrong or missing", served, wrong)
	if f.lost != 0 {
		t.Errorf("lost %d", f.lost)
	}
}

// seenFiles lists a published version's files through the edge.
func seenFiles(t *testing.T, edge, name string) []string {
	t.Helper()
	status, a, err := e2echeck.VersionAssets(edge, name, publishVersion)
	if err != nil || status != 200 {
		t.Fatalf("%s@%s on the edge: %d %v", name, publishVersion, status, err)
	}
	return a.Files
}

func first(s []string) string { return s[0] }

func bucketEnv(b metadata.Buckets) []string {
	return []string{"BUCKET_FILES=" + b.Files, "BUCKET_MIRROR=" + b.Mirror, "BUCKET_META=" + b.Meta,
		"BUCKET_MIRROR_META=" + b.MirrorMeta, "BUCKET_INCOMING=" + b.Incoming}
}
