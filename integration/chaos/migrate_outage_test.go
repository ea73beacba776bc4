//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/integration/e2echeck"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/faultproxy"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// TestMigrateStoreOutages is the outage test: a job's destination
// MinIO is stopped for two minutes mid-job and started again, then the
// same for the source. Each job must complete with every object copied
// once (counted at the destination's proxy), none failed, no dead letter;
// the report gives the time each waited.
func TestMigrateStoreOutages(t *testing.T) {
	f, recordFigures := startFigures(t, "migrate-outage")
	defer recordFigures()
	count, outage := 10_000, 2*time.Minute
	if *soak {
		count = 20_000
	}
	rig := startMigrateRig(t, "migrate-outage", "chaos-outage-jobs")
	keys, jobs := rig.keys, rig.jobs
	for _, down := range []string{migrate.SideDest, migrate.SideSource} {
		t.Run(down, func(t *testing.T) { outageJob(t, f, keys, jobs, down, count, outage) })
	}
	if f.lost != 0 {
		t.Errorf("lost %d", f.lost)
	}
}

// stoppable is a MinIO of the outage test, with the credentials of the
// server it stands in for, stopped and started again on its port and data.
type stoppable struct {
	*devstack.MinIO
	dir string
}

func startStoppable(t *testing.T, name string, like *devstack.MinIO) *stoppable {
	t.Helper()
	s := &stoppable{dir: filepath.Join(env.dir, name)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	if s.MinIO, err = devstack.StartMinIO(ctx, devstack.MinIOOptions{DataDir: s.dir, AccessKey: like.AccessKey, SecretKey: like.SecretKey, Logs: env.logs}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(10 * time.Second) })
	return s
}

func (s *stoppable) restart(t *testing.T) {
	t.Helper()
	port := func(hostPort string) int {
		_, p, _ := net.SplitHostPort(hostPort)
		n, _ := strconv.Atoi(p)
		return n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	next, err := devstack.StartMinIO(ctx, devstack.MinIOOptions{DataDir: s.dir, Port: port(s.Endpoint), ConsolePort: port(s.ConsoleURL[len("http://"):]),
		AccessKey: s.AccessKey, SecretKey: s.SecretKey, Logs: env.logs})
	if err != nil {
		t.Fatalf("start minio again on %s: %v", s.Endpoint, err)
	}
	s.MinIO = next
}

func outageJob(t *testing.T, f *figures, keys *keyring.Keyring, jobs migrate.JobStore, down string, count int, outage time.Duration) {
	ctx := context.Background()
	objs := e2echeck.Generated(count, 77)
	var own *stoppable
	var srcStore, dstStore objectstore.Store
	var srcEndpoint, dstEndpoint string
	var proxy *faultproxy.Proxy
	if down == migrate.SideDest {
		own = startStoppable(t, "outage-dst", env.mirror)
		st, err := s3.New(s3.Config{Endpoint: own.Endpoint, AccessKey: own.AccessKey, SecretKey: own.SecretKey})
		if err != nil {
			t.Fatal(err)
		}
		srcStore, dstStore = env.primaryStore, st
		proxy = faultproxy.New(own.Endpoint, faultproxy.Faults{}, 31)
		srcEndpoint, dstEndpoint = env.primary.Endpoint, proxy.Endpoint
	} else {
		own = startStoppable(t, "outage-src", env.primary)
		st, err := s3.New(s3.Config{Endpoint: own.Endpoint, AccessKey: own.AccessKey, SecretKey: own.SecretKey})
		if err != nil {
			t.Fatal(err)
		}
		srcStore, dstStore = st, env.mirrorStore
		proxy = faultproxy.New(env.mirror.Endpoint, faultproxy.Faults{}, 32)
		// The source is reached directly: a stopped store refuses connections.
		srcEndpoint, dstEndpoint = own.Endpoint, proxy.Endpoint
	}
	defer proxy.Close()
	srcBucket := migratetest.Bucket(t, srcStore, "outage-src")
	seed(t, srcStore, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, dstStore, "outage-dst")

	job := fmt.Sprintf("outage-%s-%d", down[:3], time.Now().UnixNano())
	in := migrateInput(t, keys, job, srcEndpoint, srcBucket, dstEndpoint, dstBucket)
	in.Verify = false
	run := startMigration(ctx, t, in)
	query := func() (contract.Status, error) {
		v, err := env.client.QueryWorkflow(ctx, contract.MigrationWorkflowID(job), "", contract.StatusQuery)
		var st contract.Status
		if err == nil {
			err = v.Get(&st)
		}
		return st, err
	}
	started := time.Now()
	eventually(t, 5*time.Minute, "the job copies its first page", func() (bool, string) {
		st, err := query()
		if err != nil {
			return false, err.Error()
		}
		return st.Copied > 0, fmt.Sprintf("copied %d", st.Copied)
	})
	if err := own.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	var copiedAtStop int64
	eventually(t, 2*time.Minute, "the job waits for the "+down, func() (bool, string) {
		st, err := query()
		if err != nil {
			return false, err.Error()
		}
		copiedAtStop = st.Copied
		return st.WaitingFor == down && st.State == contract.StateRunning, fmt.Sprintf("state %s, waiting for %q", st.State, st.WaitingFor)
	})
	time.Sleep(time.Until(stopped.Add(outage)))
	if st, err := query(); err != nil || st.WaitingFor != down || st.Failed != 0 {
		t.Errorf("at the end of the outage: %+v %v; want waiting for the %s, nothing failed", st, err, down)
	}
	own.restart(t)
	restarted := time.Now()

	var st contract.Status
	eventually(t, 20*time.Minute, "the job ends", jobEnded(ctx, t, run, job, &st))
	resumedIn := time.Since(restarted)

	n := int64(len(objs))
	f.faults++
	f.operations += proxy.Counts().Requests
	if st.State != contract.StateCompleted || st.Copied != n || st.Failed != 0 || st.Skipped != 0 {
		t.Errorf("status %+v; want %d copied, none failed or skipped", st, n)
		f.lost++
	} else {
		f.verified++
	}
	dead := migratetest.DeadLetters(t, jobs, job, st.Execution)
	for _, d := range dead {
		t.Errorf("dead letter %s: %s", d.Key, d.Error)
	}
	f.lost += int64(len(dead))

	// No object written twice. A write the destination committed just as
	// it was stopped has no 200 for the proxy to count, only a write that
	// reached the store without one (a batch's entries too): an object may
	// lack a confirmed write only if such a write of it was sent; the copy
	// found there afterwards (read back below) is that write.
	writes, unconfirmed := proxy.Writes(), proxy.Unconfirmed()
	var once, unanswered, twice, unsent int64
	for _, o := range objs {
		k := dstBucket + "/" + in.KeyMap().Dest(o.Key)
		switch n := writes[k]; {
		case n == 1:
			once++
		case n == 0 && unconfirmed[k] > 0 && down == migrate.SideDest:
			unanswered++
		case n == 0:
			unsent++
			t.Errorf("%s: no write of it reached the destination", o.Key)
		default:
			twice++
			t.Errorf("%s written %d times", o.Key, n)
		}
	}
	other := twice + unsent
	same, diff := e2echeck.Compare(ctx, dstStore, dstBucket, in.KeyMap(), objs, func(migratetest.Object, []byte, error) {})
	if diff != 0 {
		t.Errorf("%d objects missing or different at the destination", diff)
	}
	f.verified += once + same
	f.lost += other + diff
	f.note("%s MinIO stopped for %s mid-job (%d objects; %d copied when it stopped, %s after the start) and started again: the job waited %.0f s in all (state running, waiting_for=%s), went on %s after the restart by itself, and completed: copied %d, failed %d, **%d dead letters**; at the destination's proxy %d objects written exactly once, %d twice, %d whose one write the store committed as it stopped (no answer to count; found there after); %d byte-identical",
		down, outage, n, copiedAtStop, stopped.Sub(started).Round(time.Second), st.WaitedSeconds, down, resumedIn.Round(time.Second), st.Copied, st.Failed, len(dead), once, twice, unanswered, same)
}
