package migrate_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// ownMinIO is a MinIO server of one test, which it stops and starts again
// (same port, same data) to make an outage.
type ownMinIO struct {
	*devstack.MinIO
	dir  string
	logs *testenv.SyncBuffer
}

func startOwnMinIO(t *testing.T) *ownMinIO {
	t.Helper()
	m := &ownMinIO{dir: filepath.Join(t.TempDir(), "data"), logs: &testenv.SyncBuffer{}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	if m.MinIO, err = devstack.StartMinIO(ctx, devstack.MinIOOptions{DataDir: m.dir, AccessKey: "outageaccess", SecretKey: "outagesecret", Logs: m.logs}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop(10 * time.Second) })
	return m
}

// restart starts the stopped server again where it was.
func (m *ownMinIO) restart(t *testing.T) {
	t.Helper()
	_, portText, _ := net.SplitHostPort(m.Endpoint)
	port, _ := strconv.Atoi(portText)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	next, err := devstack.StartMinIO(ctx, devstack.MinIOOptions{DataDir: m.dir, Port: port, ConsolePort: consolePort(m.ConsoleURL),
		AccessKey: m.AccessKey, SecretKey: m.SecretKey, Logs: m.logs})
	if err != nil {
		t.Fatalf("start minio again on %s: %v", m.Endpoint, err)
	}
	m.MinIO = next
}

func consolePort(url string) int {
	_, p, _ := net.SplitHostPort(url[len("http://"):])
	n, _ := strconv.Atoi(p)
	return n
}

// The outage test, short: a store stopped mid-job for 15 s and
// started again. The job waits (running; status --json says for what,
// since when, why), resumes by itself and completes with every object
// copied once, none failed, no dead letters. The destination is reached
// through a proxy (a dead store behind it answers 502: three on distinct
// keys call it down), the source directly (one refused connection does).
// The two-minute version is in the chaos suite.
func TestStoreOutageIsAPause(t *testing.T) {
	for _, down := range []string{migrate.SideDest, migrate.SideSource} {
		t.Run(down, func(t *testing.T) { storeOutage(t, down, 15*time.Second) })
	}
}

func storeOutage(t *testing.T, down string, outage time.Duration) {
	startWorker(t, 4)
	ctx := context.Background()
	own := startOwnMinIO(t)
	ownStore, err := s3.New(s3.Config{Endpoint: own.Endpoint, AccessKey: own.AccessKey, SecretKey: own.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	objs := migratetest.Small("o/", 3000, 2<<10)
	job := fmt.Sprintf("outage-%s-%d", down[:3], time.Now().UnixNano())
	var src, dst side
	var proxy *migratetest.Proxy
	if down == migrate.SideDest {
		srcBucket := migratetest.Bucket(t, env.Store, "outage-src")
		migratetest.Seed(t, env.Store, srcBucket, objs)
		dstBucket := migratetest.Bucket(t, ownStore, "outage-dst")
		proxy = migratetest.NewProxy(own.Endpoint)
		src = source(srcBucket)
		dst = side{endpoint: proxy.Endpoint, access: own.AccessKey, secret: own.SecretKey, bucket: dstBucket}
	} else {
		srcBucket := migratetest.Bucket(t, ownStore, "outage-src")
		migratetest.Seed(t, ownStore, srcBucket, objs)
		dstBucket := migratetest.Bucket(t, env.Store2, "outage-dst")
		proxy = migratetest.NewProxy(env.MinIO2.Endpoint)
		src = side{endpoint: own.Endpoint, access: own.AccessKey, secret: own.SecretKey, bucket: srcBucket}
		dst = dest2(proxy.Endpoint, dstBucket, "")
	}
	defer proxy.Close()
	in := jobInput(t, job, src, dst)
	in.Settings.Concurrency = 4
	run := start(t, in)
	eventually(t, time.Minute, "the first page copied", func() bool { return status(t, job).Copied > 0 })
	if err := own.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()

	eventually(t, time.Minute, "the job waits for the "+down, func() bool { return status(t, job).WaitingFor == down })
	stdout, _, code := migrateCLI(t, nil, "status", job, "--json")
	var st contract.Status
	oneJSON(t, stdout, &st)
	if code != 0 || st.State != contract.StateRunning || st.WaitingFor != down || st.WaitingSince == nil || st.WaitingReason == "" ||
		st.WaitingSince.Before(stopped.Add(-time.Second)) || st.Failed != 0 {
		t.Fatalf("status --json while the %s is down (exit %d): %s", down, code, stdout)
	}
	if d := currentDetails(t, contract.MigrationWorkflowID(job)); !strings.Contains(d, "waiting for the "+down+" store") {
		t.Errorf("the Web UI's details do not say the job waits: %q", d)
	}

	time.Sleep(time.Until(stopped.Add(outage)))
	own.restart(t)
	st, err = wait(t, run)
	if err != nil || st.State != contract.StateCompleted || st.Copied != int64(len(objs)) || st.Failed != 0 || st.WaitingFor != "" {
		dead := deadLetterLines(t, job, st.Execution)
		t.Fatalf("after the outage: %+v %v\n%d dead letters:\n%s", st, err, len(dead), strings.Join(dead, "\n"))
	}
	if st.WaitedSeconds < outage.Seconds()-2 {
		t.Errorf("waited %.1f s for a %s outage", st.WaitedSeconds, outage)
	}
	if seqs, _, err := jobs.DeadPages(ctx, job, st.Execution, -1, 10); err != nil || len(seqs) != 0 {
		t.Fatalf("dead letters on pages %v (%v); want none", seqs, err)
	}
	// Never written twice. A write the destination committed just as it was
	// stopped has no 200 for the proxy to count, only a write sent without
	// one (a batch's entries too): an object may lack a confirmed write only
	// if such a write of it reached the store; the copies are read back below.
	writes, unconfirmed, unanswered := proxy.Writes(), proxy.Unconfirmed(), 0
	for _, o := range objs {
		k := dst.bucket + "/" + in.KeyMap().Dest(o.Key)
		switch n := writes[k]; {
		case n == 1:
		case n == 0 && unconfirmed[k] > 0:
			unanswered++
		case n == 0:
			t.Errorf("%s: no write of it reached the destination", o.Key)
		default:
			t.Errorf("%s written %d times", o.Key, n)
		}
	}
	if down == migrate.SideSource && unanswered > 0 {
		t.Errorf("%d objects with no write confirmed at the destination, which stayed up", unanswered)
	}
	migratetest.CheckCopies(t, proxyStore(t, dst), dst.bucket, in.KeyMap(), objs)
	t.Logf("%s down %s: the job waited %.1f s and copied %d objects, each once (%d committed as the store stopped, unconfirmed)", down, outage, st.WaitedSeconds, st.Copied, unanswered)
}

// proxyStore reads a side's store directly (its endpoint may be a proxy,
// which forwards reads as they are).
func proxyStore(t *testing.T, s side) *s3.Store {
	t.Helper()
	st, err := s3.New(s3.Config{Endpoint: s.endpoint, AccessKey: s.access, SecretKey: s.secret})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
