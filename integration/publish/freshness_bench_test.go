package integration

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/edge"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/onrequest"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/schedules"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// freshnessConfig scales BenchmarkFreshness: FRESHNESS_MINUTES (10) is the
// window the releases fall in, FRESHNESS_RELEASES (60) how many,
// FRESHNESS_SCHEDULE (10m, make run's UPDATE_EVERY) the Schedule's interval.
type freshnessConfig struct {
	window   time.Duration
	releases int
	every    time.Duration
}

func freshnessConfigFromEnv(b *testing.B) freshnessConfig {
	b.Helper()
	c := freshnessConfig{window: 10 * time.Minute, releases: 60, every: 10 * time.Minute}
	if v := os.Getenv("FRESHNESS_MINUTES"); v != "" {
		m, err := strconv.ParseFloat(v, 64)
		if err != nil || m <= 0 {
			b.Fatalf("FRESHNESS_MINUTES=%q: want a positive number of minutes", v)
		}
		c.window = time.Duration(m * float64(time.Minute))
	}
	if v := os.Getenv("FRESHNESS_RELEASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("FRESHNESS_RELEASES=%q: want a positive whole number", v)
		}
		c.releases = n
	}
	if v := os.Getenv("FRESHNESS_SCHEDULE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			b.Fatalf("FRESHNESS_SCHEDULE=%q: want a duration of a minute or more, e.g. 10m", v)
		}
		c.every = d
	}
	return c
}

// freshLibraryCount is how many catalog libraries the releases are spread
// over; one more is kept for the first-request part.
const freshLibraryCount = 20

// BenchmarkFreshness measures how fresh Publish is: from the moment a
// release appears on the local registry to the first byte of one of its
// files served by the edge with the right SRI. Releases (FRESHNESS_RELEASES,
// 60, most under 50 files, one in 20 of 1,000 files) come at seeded random
// moments over FRESHNESS_MINUTES (10) while a poller per release asks the
// edge every 200 ms. First with npm's follower on the registry's changes
// feed and the package-updates Schedule (every FRESHNESS_SCHEDULE, 10m) as
// the safety net, at an edge as deployed (the package-document TTL 30 s);
// then the same releases again with the follower stopped,
// the Schedule alone: the baseline. Last, with neither, a request for each
// of 20 unpublished 20-file versions at an edge that publishes on first
// request. The dev server, MinIO and the local registry as for every test;
// both worker pools and the edge in this process, as the other publish
// benchmarks have them. The whole run takes FRESHNESS_MINUTES twice, plus
// up to one Schedule interval for the baseline's last releases.
func BenchmarkFreshness(b *testing.B) {
	if env == nil {
		b.Skip("needs the dev server and MinIO (not started with -short)")
	}
	cfg := freshnessConfigFromEnv(b)
	setUpStack(b)
	ctx := context.Background()
	reg := registrytest.New()
	b.Cleanup(reg.Close)
	libs := freshLibraries(b, freshLibraryCount+1)
	dir := writeFreshCatalog(b, libs)
	pkgs := make([]catalog.Package, len(libs))
	for i, l := range libs {
		pkgs[i] = l.pkg
		for _, v := range []string{"1.0.0", "1.1.0"} {
			reg.Add(l.target(), v, smallTarball(l, v))
		}
	}
	pub := *acts
	pub.CatalogDir = dir
	pub.NPM = &registry.NPM{BaseURL: reg.URL, Client: acts.HTTP}
	pub.GitHub = &registry.GitHub{BaseURL: reg.URL, Client: acts.HTTP}
	pub.Changes = &registry.Changes{URL: reg.URL + "/_changes", Client: acts.HTTP}
	// Every library imported before, as in a running deployment.
	seed(b, ctx, &pub, pkgs)
	startPools(b, &pub, nil)
	// The edge as deployed without EDGE_CATALOG_DIR: a poller's request
	// must not publish the version itself.
	plain := httptest.NewServer(edge.New(edge.Config{Primary: env.Store, Mirror: env.Store, Buckets: buckets}))
	b.Cleanup(plain.Close)

	const scheduleID = "bench-freshness"
	if _, err := schedules.Upsert(ctx, env.Client, scheduleID, cfg.every); err != nil {
		b.Fatal(err)
	}
	deleteSchedule := func() { _ = env.Client.ScheduleClient().GetHandle(ctx, scheduleID).Delete(context.Background()) }
	b.Cleanup(deleteSchedule)
	stopFollower := startFreshFollower(b, reg)

	plan := planReleases(37, cfg.releases, cfg.window, freshLibraryCount)
	b.Logf("%d releases over %s, Schedule every %s", len(plan), cfg.window, cfg.every)
	withFollower := measureReleases(b, reg, plain.URL, libs, plan, 2, cfg)
	stopFollower()
	scheduleOnly := measureReleases(b, reg, plain.URL, libs, plan, 3, cfg)
	deleteSchedule()
	first := measureFirstRequests(b, reg, dir, libs[freshLibraryCount])

	withFollower.report(b, "follower")
	scheduleOnly.report(b, "schedule")
	first.report(b)
	leavesNoWorkflowRunning(b)
}

// startFreshFollower starts npm's follower on reg's feed from its latest
// sequence; the returned func terminates it and waits until it has ended.
func startFreshFollower(b *testing.B, reg *registrytest.Registry) (stop func()) {
	b.Helper()
	opts, workflowType, _ := pubclient.FollowerStart(contract.RegistryNPM)
	in := contract.FollowerInput{Registry: contract.RegistryNPM, Since: strconv.FormatInt(reg.LastSeq(), 10)}
	if _, err := env.Client.ExecuteWorkflow(context.Background(), opts, workflowType, in); err != nil {
		b.Fatal(err)
	}
	stop = func() {
		_ = env.Client.TerminateWorkflow(context.Background(), opts.ID, "", "freshness: the Schedule alone from here")
		eventually(b, 30*time.Second, "the follower has ended", func() (bool, string) {
			d, err := env.Client.DescribeWorkflow(context.Background(), opts.ID, "")
			if err != nil {
				return false, err.Error()
			}
			st := d.RawResponse.GetWorkflowExecutionInfo().GetStatus()
			return st != enums.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
		})
	}
	b.Cleanup(func() { _ = env.Client.TerminateWorkflow(context.Background(), opts.ID, "", "benchmark over") })
	return stop
}

// releaseTimes is what a phase measured, per release: release → the edge's
// first byte of the right file, and release → the version's commit (its
// version document's publishedAt), by the release's size.
type releaseTimes struct {
	served, committed map[bool][]time.Duration // by "has thousandFiles files"
	failed            int
}

// measureReleases puts the planned releases on the registry at their
// moments (version major.i.0 for the i-th) and polls the edge for each
// until it serves the release's file with the right SRI.
func measureReleases(b *testing.B, reg *registrytest.Registry, edgeURL string, libs []freshLibrary, plan []freshRelease, major int, cfg freshnessConfig) releaseTimes {
	b.Helper()
	built := make([]builtRelease, len(plan))
	for i, r := range plan {
		built[i] = buildRelease(b, libs[r.lib], fmt.Sprintf("%d.%d.0", major, i), r.files, uint64(major*1000+i))
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: len(plan)}}
	defer client.CloseIdleConnections()
	// A release not served one Schedule interval and five minutes after
	// it appeared has been missed by the safety net too.
	giveUp := cfg.every + 5*time.Minute
	var mu sync.Mutex
	times := releaseTimes{served: map[bool][]time.Duration{}, committed: map[bool][]time.Duration{}}
	var wg sync.WaitGroup
	start := time.Now()
	for i, r := range plan {
		wg.Go(func() {
			lib, version := libs[r.lib], fmt.Sprintf("%d.%d.0", major, i)
			time.Sleep(time.Until(start.Add(r.at)))
			reg.Add(lib.target(), version, built[i].tarball)
			released := time.Now()
			served, err := pollServed(client, edgeURL, lib.pkg.Name, version, built[i], released, giveUp)
			committed := committedAfter(lib.pkg.Name, version, released)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				times.failed++
				b.Errorf("%s@%s (%d files): %v", lib.pkg.Name, version, r.files, err)
				return
			}
			big := r.files >= thousandFiles
			times.served[big] = append(times.served[big], served)
			times.committed[big] = append(times.committed[big], committed)
		})
	}
	wg.Wait()
	return times
}

// pollServed asks the edge for the release's probe file every 200 ms until
// it is served, and returns how long after released its first byte came.
// Served bytes with another SRI are an error at once.
func pollServed(client *http.Client, edgeURL, name, version string, rel builtRelease, released time.Time, giveUp time.Duration) (time.Duration, error) {
	url := fmt.Sprintf("%s/ajax/libs/%s/%s/%s", edgeURL, name, version, rel.probe)
	last := "no answer yet"
	for time.Since(released) < giveUp {
		resp, err := client.Get(url)
		if err != nil {
			last = err.Error()
		} else {
			firstByte := time.Since(released)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case err != nil:
				last = err.Error()
			case resp.StatusCode == http.StatusOK:
				if got := transform.SRI(body); got != rel.probeSRI {
					return 0, fmt.Errorf("%s served with SRI %s, the release's file has %s", rel.probe, got, rel.probeSRI)
				}
				return firstByte, nil
			default:
				last = fmt.Sprintf("%d %.80s", resp.StatusCode, body)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s not served within %s of its release (last answer: %s)", rel.probe, giveUp, last)
}

// committedAfter is how long after released the version document says the
// version was committed (-1 s when it cannot be read).
func committedAfter(name, version string, released time.Time) time.Duration {
	var doc metadata.Version
	if _, err := objectstore.GetJSON(context.Background(), env.Store, buckets.Meta, metadata.VersionKey(name, version), &doc); err != nil {
		return -time.Second
	}
	return doc.PublishedAt.Sub(released)
}

// nearestRank is the p-th percentile of sorted (nearest rank).
func nearestRank(sorted []time.Duration, p int) time.Duration {
	return sorted[max(0, (len(sorted)*p+99)/100-1)]
}

// report writes a phase's rows: p50, p95 and max for releases under 50
// files, p50 and max of the 1,000-file ones, and the same of the commit.
func (r releaseTimes) report(b *testing.B, phase string) {
	for _, big := range []bool{false, true} {
		served, committed := r.served[big], r.committed[big]
		if len(served) == 0 {
			continue
		}
		slices.Sort(served)
		slices.Sort(committed)
		size := ""
		if big {
			size = "-1000files"
		}
		b.ReportMetric(nearestRank(served, 50).Seconds(), phase+size+"-p50-s")
		if !big {
			b.ReportMetric(nearestRank(served, 95).Seconds(), phase+size+"-p95-s")
		}
		b.ReportMetric(served[len(served)-1].Seconds(), phase+size+"-max-s")
		b.ReportMetric(nearestRank(committed, 50).Seconds(), phase+size+"-committed-p50-s")
		b.ReportMetric(committed[len(committed)-1].Seconds(), phase+size+"-committed-max-s")
		b.Logf("%s, %d releases%s: served p50 %v p95 %v max %v; committed p50 %v max %v", phase, len(served), size,
			nearestRank(served, 50), nearestRank(served, 95), served[len(served)-1], nearestRank(committed, 50), committed[len(committed)-1])
	}
	b.ReportMetric(float64(r.failed), phase+"-not-served")
}

// firstRequestTimes is what the first-request part measured.
type firstRequestTimes struct {
	took         []time.Duration
	notOK, twice int
}

// firstRequestTries is how many unpublished versions are asked for.
const firstRequestTries = 20

// measureFirstRequests puts 20 new 20-file versions of lib on the registry
// (no follower, no Schedule: only a request can publish them) and asks an
// edge that publishes on first request for a file of each, one after the
// other, then checks that each was published once.
func measureFirstRequests(b *testing.B, reg *registrytest.Registry, catalogDir string, lib freshLibrary) firstRequestTimes {
	b.Helper()
	p, err := onrequest.New(onrequest.Config{
		CatalogDir: catalogDir, NPM: &registry.NPM{BaseURL: reg.URL}, Store: env.Store, MetaBucket: buckets.Meta, Temporal: env.Client,
		// Twenty starts of one library within a minute: above the default
		// per-library limit (10), which is not what is measured.
		PerLibrary: 100,
	})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(edge.New(edge.Config{Primary: env.Store, Mirror: env.Store, Buckets: buckets, OnRequest: p, WaitForPublish: edge.DefaultWaitForPublish}))
	defer srv.Close()
	releases := make([]builtRelease, firstRequestTries)
	for i := range releases {
		version := fmt.Sprintf("4.%d.0", i)
		releases[i] = buildRelease(b, lib, version, 20, uint64(4000+i))
		reg.Add(lib.target(), version, releases[i].tarball)
	}
	var out firstRequestTimes
	for i, rel := range releases {
		version := fmt.Sprintf("4.%d.0", i)
		start := time.Now()
		resp, err := http.Get(fmt.Sprintf("%s/ajax/libs/%s/%s/%s", srv.URL, lib.pkg.Name, version, rel.probe))
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || transform.SRI(body) != rel.probeSRI {
			out.notOK++
			b.Errorf("first request for %s@%s/%s: %d after %v (%v), want 200 with the release's bytes", lib.pkg.Name, version, rel.probe, resp.StatusCode, took, err)
			took = time.Duration(math.MaxInt64)
		}
		out.took = append(out.took, took)
	}
	for i := range releases {
		version := fmt.Sprintf("4.%d.0", i)
		eventually(b, 30*time.Second, "visibility lists "+version+"'s run", func() (bool, string) {
			n := publishRuns(b, lib.pkg.Name, version)
			return n >= 1, fmt.Sprintf("%d runs", n)
		})
		runs, downloads := publishRuns(b, lib.pkg.Name, version), reg.Requests(registrytest.TarballPath(lib.target(), version))
		if runs != 1 || downloads != 1 {
			out.twice++
			b.Errorf("%s@%s: %d PublishVersion runs, tarball downloaded %d times; want one of each", lib.pkg.Name, version, runs, downloads)
		}
	}
	return out
}

func (f firstRequestTimes) report(b *testing.B) {
	slices.Sort(f.took)
	b.ReportMetric(nearestRank(f.took, 50).Seconds(), "first-request-p50-s")
	b.ReportMetric(nearestRank(f.took, 95).Seconds(), "first-request-p95-s")
	b.ReportMetric(float64(f.notOK), "first-request-not-200")
	b.ReportMetric(float64(f.twice), "first-request-published-twice")
	b.Logf("first request → 200 for a new 20-file version, %d tries: p50 %v, p95 %v, max %v", len(f.took),
		nearestRank(f.took, 50), nearestRank(f.took, 95), f.took[len(f.took)-1])
}
