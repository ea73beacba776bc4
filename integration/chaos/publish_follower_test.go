//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/integration/e2echeck"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// TestFollowerUnderKills releases versions of catalog packages one after
// another on a local registry while the publish and compress worker
// processes are killed with SIGKILL, with no Schedule at all: every
// release must still be found through the changes feed by npm's registry
// follower (whose poll dies with its worker and resumes from the sequence
// it kept), and published exactly once, on both stores.
func TestFollowerUnderKills(t *testing.T) {
	f, recordFigures := startFigures(t, "publish-follower")
	defer recordFigures()
	ctx := context.Background()
	packages, kills := 8, 8
	if *soak {
		packages, kills = 24, 30
	}
	npm := registrytest.New()
	defer npm.Close()
	catalogDir := t.TempDir()
	names := make([]string, packages)
	tarballs := make([][]byte, packages)
	for i := range packages {
		names[i] = fmt.Sprintf("chaos-follow-%02d", i)
		files := benchdata.Package(uint64(2000+i), 10, 48<<10)
		tarballs[i] = e2echeck.TarballOf(files)
		if err := e2echeck.WriteCatalogEntry(catalogDir, e2echeck.SamplePackage(names[i], "chaos", files)); err != nil {
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
	workerEnv := append(bucketEnv(b),
		"TEMPORAL_ADDRESS="+env.temporal.HostPort, "LOG_FORMAT=json", "HEALTH_ADDR=127.0.0.1:0",
		"S3_ENDPOINT="+env.primary.Endpoint, "S3_ACCESS_KEY="+env.primary.AccessKey, "S3_SECRET_KEY="+env.primary.SecretKey,
		"MIRROR_S3_ENDPOINT="+env.mirror.Endpoint, "MIRROR_S3_ACCESS_KEY="+env.mirror.AccessKey, "MIRROR_S3_SECRET_KEY="+env.mirror.SecretKey,
		"CATALOG_DIR="+catalogDir, "NPM_REGISTRY="+npm.URL, "GITHUB_API="+npm.URL, "NPM_CHANGES_URL="+npm.URL+"/_changes")
	var pools []*proc
	for i := range 2 {
		pools = append(pools,
			supervise(t, fmt.Sprintf("follow-publish-%d", i), env.bins["publish"], append(workerEnv, "MAX_ACTIVITIES=8")),
			supervise(t, fmt.Sprintf("follow-compress-%d", i), env.bins["compress"], append(workerEnv, "MAX_ACTIVITIES=4", "COMPRESS_CPUS=1")))
	}

	// The follower, from the feed's start; terminated when the suite ends.
	opts, workflowType, _ := pubclient.FollowerStart(contract.RegistryNPM)
	if _, err := env.client.ExecuteWorkflow(ctx, opts, workflowType,
		contract.FollowerInput{Registry: contract.RegistryNPM, Since: strconv.FormatInt(npm.LastSeq(), 10), PollWait: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.client.TerminateWorkflow(ctx, opts.ID, "", "chaos suite over") }()

	started := time.Now()
	stopKilling := make(chan struct{})
	killed := killer(pools, 4*time.Second, 17, stopKilling)
	// One release every second and a half, while the killer runs.
	for i, name := range names {
		npm.Add(name, publishVersion, tarballs[i])
		time.Sleep(1500 * time.Millisecond)
	}
	published := func() int {
		n := 0
		for _, name := range names {
			var doc metadata.Package
			if _, err := objectstore.GetJSON(ctx, env.primaryStore, b.Meta, metadata.PackageKey(name), &doc); err == nil && len(doc.Versions) > 0 {
				n++
			}
		}
		return n
	}
	eventually(t, 10*time.Minute, "every release found through the feed and published", func() (bool, string) {
		total := 0
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
		n := published()
		return n == len(names), fmt.Sprintf("%d of %d published, %d kills", n, len(names), total)
	})
	select {
	case <-stopKilling:
	default:
		close(stopKilling)
	}
	made := <-killed
	took := time.Since(started)

	var status pubclient.Follower
	eventually(t, time.Minute, "the follower took in every change", func() (bool, string) {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var err error
		status, err = pubclient.Libraries{Temporal: env.client}.Follower(qctx, contract.RegistryNPM)
		return err == nil && status.Status.Since == strconv.FormatInt(npm.LastSeq(), 10), fmt.Sprintf("%+v %v", status, err)
	})
	st := status.Status.Stats
	f.faults = int64(made)
	f.operations = int64(len(names)) + int64(npm.FeedPolls())
	f.note("%d worker processes killed with SIGKILL (2 publish, 2 compress, one every 2–6 s while %d versions were released, one every 1.5 s; %d process starts in all); no Schedule: only npm's registry follower could find them", made, len(names), startsOf(pools))
	f.note("the follower: %d polls of the feed (%d failed or died with their worker and were retried from the sequence kept), %d changes read, %d checks started; every release published within %s of the first", st.Polls, st.Failures, st.Changes, st.Checks, took.Round(time.Second))
	v := verifyPublished(t, names, publishVersion)
	f.verified += v.verified
	f.lost += v.lost
	f.note("%d versions published exactly once; %d stored files and representations checked (SHA-512 against the SRI, .br and .gz decoded), %d wrong", len(names), v.verified, v.lost)
	if f.lost != 0 {
		t.Errorf("lost %d", f.lost)
	}
}
