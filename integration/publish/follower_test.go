package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/schedules"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// startFollower starts npm's follower from the registry's latest sequence
// (what came before is the Schedule's), polling for wait at a time, and
// terminates it when the test ends (before the check that no workflow is
// left running).
func startFollower(t *testing.T, wait time.Duration) {
	t.Helper()
	opts, workflowType, _ := pubclient.FollowerStart(contract.RegistryNPM)
	in := contract.FollowerInput{Registry: contract.RegistryNPM, Since: strconv.FormatInt(npm.LastSeq(), 10), PollWait: wait}
	if _, err := env.Client.ExecuteWorkflow(context.Background(), opts, workflowType, in); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.TerminateWorkflow(context.Background(), opts.ID, "", "test over")
	})
}

// followerStatus queries the follower.
func followerStatus(t *testing.T) (pubclient.Follower, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return pubclient.Libraries{Temporal: env.Client}.Follower(ctx, contract.RegistryNPM)
}

// publishedVersions lists a package's versions in its package document.
func publishedVersions(name string) []string {
	var doc metadata.Package
	if _, err := objectstore.GetJSON(context.Background(), env.Store, buckets.Meta, metadata.PackageKey(name), &doc); err != nil {
		return nil
	}
	return doc.Versions
}

// startPublishProcess runs the publish pool as its own process (built from
// workers/publish), reading the local registry's feed, until the test ends
// or kill is called.
func startPublishProcess(t *testing.T, bin, catalogDir string) (kill func()) {
	t.Helper()
	var logs testenv.SyncBuffer
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"TEMPORAL_ADDRESS="+env.Temporal.HostPort, "S3_ENDPOINT="+env.MinIO.Endpoint,
		"S3_ACCESS_KEY="+env.MinIO.AccessKey, "S3_SECRET_KEY="+env.MinIO.SecretKey,
		"MIRROR_S3_ENDPOINT="+env.MinIO.Endpoint, "MIRROR_S3_ACCESS_KEY="+env.MinIO.AccessKey, "MIRROR_S3_SECRET_KEY="+env.MinIO.SecretKey,
		"BUCKET_FILES="+buckets.Files, "BUCKET_MIRROR="+buckets.Mirror, "BUCKET_META="+buckets.Meta,
		"BUCKET_MIRROR_META="+buckets.MirrorMeta, "BUCKET_INCOMING="+buckets.Incoming,
		"CATALOG_DIR="+catalogDir, "NPM_REGISTRY="+npm.URL, "GITHUB_API="+npm.URL, "NPM_CHANGES_URL="+npm.URL+"/_changes",
		"HEALTH_ADDR=127.0.0.1:0", "LOG_FORMAT=json")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	kill = func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	t.Cleanup(func() {
		kill()
		if t.Failed() {
			t.Logf("publish worker's log:\n%s", logs.String())
		}
	})
	started := regexp.MustCompile(`worker started`)
	eventually(t, 30*time.Second, "the publish worker starts", func() (bool, string) {
		return started.MatchString(logs.String()), logs.String()
	})
	return kill
}

// TestFollowerResumesAfterAWorkerKill: the follower finds a release of a
// catalog package through the feed and publishes it with no Schedule at
// all; its publish worker is killed (SIGKILL) mid-poll; releases made while
// it is down are found once a worker is back, from the sequence the
// follower kept: nothing missed, nothing that did not change checked again,
// and a change of a package outside the catalog checks nothing.
func TestFollowerResumesAfterAWorkerKill(t *testing.T) {
	setUpStack(t)
	dir := writeCatalog(t, demoPackage("fol-a"), demoPackage("fol-b"))
	bin, err := testenv.BuildCommand(t.TempDir(), "./workers/publish")
	if err != nil {
		t.Fatal(err)
	}
	// The compress pool in this process; the publish pool is the process.
	compress := worker.New(env.Client, contract.CompressTaskQueue, worker.Options{MaxConcurrentActivityExecutionSize: 4})
	publishacts.RegisterCompress(compress, squash)
	if err := compress.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(compress.Stop)
	kill := startPublishProcess(t, bin, dir)
	startFollower(t, 5*time.Second)

	npm.Add("fol-a", "1.0.0", demoTarball("1.0.0", demoCSS))
	eventually(t, 2*time.Minute, "fol-a 1.0.0 published through the feed", func() (bool, string) {
		v := publishedVersions("fol-a")
		return len(v) == 1, fmt.Sprint(v)
	})
	before, err := followerStatus(t)
	if err != nil || !before.Running || before.Status.Since != strconv.FormatInt(npm.LastSeq(), 10) || before.Status.Stats.Checks != 1 {
		t.Fatalf("the follower after fol-a: %+v %v", before, err)
	}
	// The follower is long-polling the feed again when its worker dies.
	polls := npm.FeedPolls()
	eventually(t, 30*time.Second, "the follower polls again", func() (bool, string) { return npm.FeedPolls() > polls, "" })
	kill()

	npm.Add("fol-b", "1.0.0", demoTarball("1.0.0", demoCSS))
	npm.Add("not-in-the-catalog", "1.0.0", demoTarball("1.0.0", demoCSS))
	startPublishProcess(t, bin, dir)
	eventually(t, 3*time.Minute, "fol-b 1.0.0, released while the worker was down, published", func() (bool, string) {
		v := publishedVersions("fol-b")
		return len(v) == 1, fmt.Sprint(v)
	})
	var after pubclient.Follower
	eventually(t, time.Minute, "the follower took in every change", func() (bool, string) {
		after, err = followerStatus(t)
		return err == nil && after.Status.Since == strconv.FormatInt(npm.LastSeq(), 10) && len(after.Status.Checking) == 0,
			fmt.Sprintf("%+v %v", after, err)
	})
	if after.Status.Stats.Checks != 2 || after.Status.Stats.Changed != 2 || after.Status.CaughtUpAt.IsZero() || after.Lag > time.Minute {
		t.Errorf("the follower after the kill: %+v", after)
	}
	// One check each: fol-a's document was not read again after the kill,
	// and nothing asked for the package outside the catalog.
	for name, want := range map[string]int{"fol-a": 1, "fol-b": 1, "not-in-the-catalog": 0} {
		if got := npm.DocumentRequests(name); got != want {
			t.Errorf("%s's document read %d times, want %d", name, got, want)
		}
	}
	// The lanes end while their worker still runs.
	_ = env.Client.TerminateWorkflow(context.Background(), contract.RegistryFollowerWorkflowID(contract.RegistryNPM), "", "test over")
	leavesNoWorkflowRunning(t)
}

// TestFollowerStalledFeedFallsBack: while the feed stalls, the follower
// backs off and retries, saying so, and the Schedule's check still
// publishes new versions; once the feed answers, the follower follows on.
func TestFollowerStalledFeedFallsBack(t *testing.T) {
	setUpStack(t)
	ctx := testContext(t)
	pub := *acts
	pub.CatalogDir = writeCatalog(t, demoPackage("fol-stalled"))
	pub.Changes = &registry.Changes{URL: npm.URL + "/_changes", Stall: 300 * time.Millisecond}
	startPools(t, &pub, nil)
	resume := npm.StallFeed()
	defer resume()
	startFollower(t, time.Second)

	eventually(t, time.Minute, "the follower backs off a stalled feed", func() (bool, string) {
		f, err := followerStatus(t)
		return err == nil && !f.Status.StalledSince.IsZero() && f.Status.Stats.Failures >= 2 && !f.Status.RetryAt.IsZero(), fmt.Sprintf("%+v %v", f, err)
	})
	npm.Add("fol-stalled", "1.0.0", demoTarball("1.0.0", demoCSS))
	const scheduleID = "it-follower-fallback"
	if _, err := schedules.Upsert(ctx, env.Client, scheduleID, time.Hour); err != nil {
		t.Fatal(err)
	}
	sched := env.Client.ScheduleClient().GetHandle(ctx, scheduleID)
	t.Cleanup(func() { _ = sched.Delete(context.Background()) })
	if err := sched.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the Schedule's check publishes fol-stalled 1.0.0", func() (bool, string) {
		v := publishedVersions("fol-stalled")
		return len(v) == 1, fmt.Sprint(v)
	})
	resume()
	eventually(t, time.Minute, "the follower follows the feed again, up to its last change", func() (bool, string) {
		f, err := followerStatus(t)
		return err == nil && f.Status.StalledSince.IsZero() && f.Status.Since == strconv.FormatInt(npm.LastSeq(), 10) && len(f.Status.Checking) == 0,
			fmt.Sprintf("%+v %v", f, err)
	})
}
