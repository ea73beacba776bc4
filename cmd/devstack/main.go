// Command devstack is what `make run` runs: the whole system on one machine,
// in the foreground. It starts the Temporal dev server (Web UI, SQLite file so
// runs survive a restart, search attributes registered), MinIO and Redis,
// creates the buckets and the development key files, starts every worker pool,
// the edge and the gate (in front of a small demo origin) as child processes
// with prefixed logs, creates (or updates) the package-update Schedule and
// triggers it once, and creates the demo waiting room. It supervises the
// workers, the edge and the gate: one that dies is restarted (see
// devstack.Supervisor); Temporal, MinIO or Redis dying, or a crash loop, stops
// the stack. Ctrl-C stops the children in order: the edge, gate and workers
// first (they drain), then Redis, MinIO and Temporal.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/payloadcodec"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/schedules"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

var outMu sync.Mutex

// prefixWriter writes each line of a child's output with its name in front.
func prefixWriter(name, color string) io.Writer {
	r, w := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			outMu.Lock()
			fmt.Printf("\033[%sm%-9s|\033[0m %s\n", color, name, sc.Text())
			outMu.Unlock()
		}
		// A line too long to scan must not block the child's writes.
		_, _ = io.Copy(os.Stdout, r)
	}()
	return w
}

func say(format string, args ...any) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Printf("\033[1mdevstack |\033[0m "+format+"\n", args...)
}

func main() {
	if err := run(); err != nil {
		say("error: %v", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := devstack.RepoRoot()
	if err != nil {
		return err
	}
	dataDir := config.Env("DATA_DIR", filepath.Join(root, ".data"))
	binDir := config.Env("BIN_DIR", filepath.Join(root, "bin"))
	ip := config.Env("BIND_IP", "127.0.0.1")
	temporalPort := config.EnvInt("TEMPORAL_PORT", 7233)
	uiPort := config.EnvInt("TEMPORAL_UI_PORT", 8233)
	minioPort := config.EnvInt("MINIO_PORT", 9000)
	consolePort := config.EnvInt("MINIO_CONSOLE_PORT", 9001)
	edgeAddr := config.Env("EDGE_ADDR", net.JoinHostPort(ip, "8080"))
	gateAddr := config.Env("GATE_ADDR", net.JoinHostPort(ip, "8088"))
	gateHealthAddr := config.Env("GATE_HEALTH_ADDR", net.JoinHostPort(ip, "8098"))
	redisPort := config.EnvInt("REDIS_PORT", 6379)
	opsBase := config.EnvInt("OPS_PORT_BASE", devstack.DefaultOpsPortBase)
	edgeMetricsAddr := config.Env("EDGE_METRICS_ADDR", net.JoinHostPort(ip, strconv.Itoa(opsBase-1)))
	accessKey := config.Env("S3_ACCESS_KEY", "edgeflow")
	secretKey := config.Env("S3_SECRET_KEY", "edgeflow-dev-secret")
	every, err := time.ParseDuration(config.Env("UPDATE_EVERY", "10m"))
	if err != nil {
		return fmt.Errorf("UPDATE_EVERY: %w", err)
	}
	for _, d := range []string{dataDir, filepath.Join(dataDir, "minio"), filepath.Join(dataDir, "redis")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, p := range []struct {
		name string
		port int
	}{{"Temporal", temporalPort}, {"Temporal Web UI", uiPort}, {"MinIO", minioPort}, {"MinIO console", consolePort}, {"Redis", redisPort}} {
		if l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p.port))); err != nil {
			return fmt.Errorf("%s port %d is taken (is another stack running?): set its env var to another port; see README", p.name, p.port)
		} else {
			l.Close()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The payload codec (PAYLOAD_CODEC=on): every process encrypts what it
	// sends to Temporal, and the Web UI decodes through the codec server.
	codecOn, err := payloadcodec.Enabled(os.Getenv)
	if err != nil {
		return err
	}
	codecAddr := config.Env("CODEC_SERVER_ADDR", net.JoinHostPort(ip, "8234"))
	var uiCodec string
	if codecOn {
		uiCodec = "http://" + codecAddr
	}
	// Development keys (Migrate's sealed credentials, the payload codec,
	// the gate's cookie), created once: every process run from the repo
	// finds the same ones.
	for _, src := range keyring.Sources {
		path, created, err := keyring.EnsureDevFile(src, dataDir)
		if err != nil {
			return fmt.Errorf("development keys for %s: %w", src.Env, err)
		}
		if created {
			say("created the development key file %s (%s); production sets %s", path, src.Env, src.Env)
		}
	}

	say("starting Temporal dev server (data in %s)", dataDir)
	temporal, err := devstack.StartTemporal(ctx, devstack.TemporalOptions{
		DBFile: filepath.Join(dataDir, "temporal.db"), IP: ip, Port: temporalPort, UIPort: uiPort,
		UICodecEndpoint: uiCodec, Logs: prefixWriter("temporal", "36"),
	})
	if err != nil {
		return err
	}
	defer temporal.Stop(30 * time.Second)
	say("starting MinIO")
	minio, err := devstack.StartMinIO(ctx, devstack.MinIOOptions{
		DataDir: filepath.Join(dataDir, "minio"), IP: ip, Port: minioPort, ConsolePort: consolePort,
		AccessKey: accessKey, SecretKey: secretKey, Logs: prefixWriter("minio", "35"),
	})
	if err != nil {
		return err
	}
	defer minio.Stop(30 * time.Second)
	say("starting Redis (the gates' shared counters)")
	redis, err := devstack.StartRedis(ctx, devstack.RedisOptions{IP: ip, Port: redisPort, Dir: filepath.Join(dataDir, "redis"), Logs: prefixWriter("redis", "91")})
	if err != nil {
		return err
	}
	defer redis.Stop(30 * time.Second)
	// The site behind the demo gate.
	originLn, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return err
	}
	origin := &http.Server{Handler: devstack.DemoOrigin(), ReadHeaderTimeout: 10 * time.Second}
	go origin.Serve(originLn)
	defer origin.Close()

	store, err := s3.New(s3.Config{Endpoint: minio.Endpoint, AccessKey: accessKey, SecretKey: secretKey})
	if err != nil {
		return err
	}
	b := metadata.DefaultBuckets
	if err := objectstore.EnsureBuckets(ctx, store, b.Files, b.Mirror, b.Meta, b.MirrorMeta, b.Incoming); err != nil {
		return err
	}

	env := append(os.Environ(), "DATA_DIR="+dataDir,
		"TEMPORAL_ADDRESS="+temporal.HostPort, "S3_ENDPOINT="+minio.Endpoint,
		"S3_ACCESS_KEY="+accessKey, "S3_SECRET_KEY="+secretKey,
		"CATALOG_DIR="+config.Env("CATALOG_DIR", filepath.Join(root, "catalog")),
		"EDGE_ADDR="+edgeAddr,
		"GATE_ADDR="+gateAddr, "GATE_HEALTH_ADDR="+gateHealthAddr, "GATE_ORIGIN=http://"+originLn.Addr().String(),
		"GATE_DATA_CENTER="+config.Env("GATE_DATA_CENTER", "dev"), "GATE_REDIS_URL="+redis.URL,
		// The names the demo gate is reached by; a room naming another
		// host is then not bypassed by a request naming a third.
		"GATE_HOSTS="+config.Env("GATE_HOSTS", "127.0.0.1,localhost"),
	)
	// Every worker pool (bin/<queue>, built from workers/<queue>), as many
	// processes as asked, then the HTTP processes; each on its own ops
	// port (/healthz, /metrics), kept across restarts.
	sizes, err := devstack.PoolSizes(devstack.TaskQueues(), os.Getenv)
	if err != nil {
		return err
	}
	extra := []devstack.Planned{{Name: "gate", Bin: filepath.Join(binDir, "gate"), Addr: gateAddr, MetricsURL: "http://" + gateHealthAddr + "/metrics"}}
	if codecOn {
		extra = append(extra, devstack.Planned{Name: "codec", Bin: filepath.Join(binDir, "codec-server"), Addr: codecAddr,
			Env: []string{"CODEC_SERVER_ADDR=" + codecAddr, "CODEC_SERVER_UI_ORIGINS=" + temporal.UIURL}})
	}
	procs, err := devstack.PlanProcesses(devstack.TaskQueues(), sizes, ip, binDir, opsBase, edgeMetricsAddr, extra...)
	if err != nil {
		return err
	}
	sup := devstack.NewSupervisor(devstack.SupervisorOptions{Say: say})
	// Registered before the first start, so a child that fails to start
	// never leaves the ones before it running.
	defer func() {
		say("stopping: edge, gate and workers drain in-flight work first")
		// Longer than the workers' own stop timeout, so they finish draining.
		sup.Stop(2*time.Minute + 30*time.Second)
	}()
	colors := []string{"32", "33", "34", "31", "92", "93", "94", "95"}
	for i, p := range procs {
		child := devstack.Child{Name: p.Name, Path: p.Bin, Env: append(slices.Clip(env), p.Env...),
			Logs: prefixWriter(p.Name, colors[i%len(colors)])}
		if err := sup.Start(child); err != nil {
			return fmt.Errorf("%w (built by `make build`?)", err)
		}
	}

	// The stack's own client shares the workers' settings (the codec).
	tc := config.Temporal{HostPort: temporal.HostPort, Namespace: temporal.Namespace}
	c, err := tc.Dial(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer c.Close()
	created, err := schedules.Upsert(ctx, c, contract.UpdatesScheduleID, every)
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	if err := c.ScheduleClient().GetHandle(ctx, contract.UpdatesScheduleID).Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		return fmt.Errorf("trigger schedule: %w", err)
	}
	verb := "updated"
	if created {
		verb = "created"
	}
	say("schedule %q %s (every %s) and triggered: the sample catalog publishes within a minute or two", contract.UpdatesScheduleID, verb, every)
	demo := devstack.DemoRoom()
	switch _, err := (roomclient.Client{C: c}).Create(ctx, demo, roomclient.CreateOptions{}); {
	case err == nil:
		say("waiting room %q created on every path of the gate (%d active users, %d new a minute)", demo.Name, demo.TotalActiveUsers, demo.NewUsersPerMinute)
	case errors.Is(err, roomclient.ErrExists):
		say("waiting room %q kept as it is (go run ./starters/room get %s)", demo.Name, demo.Name)
	default:
		return fmt.Errorf("demo room: %w", err)
	}
	say("")
	say("  Temporal Web UI  %s  (filter: Package = \"mitt\")", temporal.UIURL)
	say("  Edge (CDN + API) http://%s", edgeAddr)
	say("  Gate (demo room) http://%s  (status http://%s/status)", gateAddr, gateHealthAddr)
	say("  MinIO console    %s  (user %s, password from S3_SECRET_KEY)", minio.ConsoleURL, accessKey)
	say("")
	say("  Metrics (Prometheus), one per process:")
	for _, p := range procs {
		if p.MetricsURL != "" {
			say("    %-12s %s", p.Name, p.MetricsURL)
		}
	}
	if codecOn {
		say("  Payload codec on: history holds ciphertext; the Web UI decodes through http://%s", codecAddr)
		say("    (the temporal CLI too: temporal workflow show -w ID --codec-endpoint http://%s)", codecAddr)
	}
	say("  Pools: %s (scale one: COMPRESS_WORKERS=3 make run, or WORKERS=compress=3,publish=2)", poolLine(sizes))
	say("")
	say("try: curl http://%s/libraries/mitt   |  open http://%s/", edgeAddr, edgeAddr)
	say("     go run ./starters/publish --package nprogress --version 0.2.0 --follow")
	say("     go run ./starters/schedule describe")
	say("     go run ./starters/migrate list     (bucket-to-bucket copies: README, Migrate)")
	say("     for i in 1 2 3 4 5 6 7; do curl -s -o /dev/null -w '%%{http_code} ' http://%s/; done   # the 6th is queued", gateAddr)
	say("     go run ./starters/room status demo --follow")
	say("Ctrl-C stops everything; the next `make run` reuses the data in %s", dataDir)

	say("A worker, the edge or the gate that dies is restarted; only Temporal, MinIO or Redis dying, or a crash loop, stops the stack.")

	select {
	case <-ctx.Done():
		// Children run in their own process groups, so devstack must outlive
		// them: further Ctrl-Cs are absorbed until everything has stopped.
		return nil
	case err := <-sup.Failed():
		return stopping(fmt.Errorf("%w", err))
	case <-temporal.Ended():
		return stopping(fmt.Errorf("the Temporal dev server is gone, and nothing runs without it: %s", temporal.Died()))
	case <-minio.Ended():
		return stopping(fmt.Errorf("MinIO is gone, and the workers and the edge cannot work without it: %s", minio.Died()))
	case <-redis.Ended():
		return stopping(fmt.Errorf("the Redis server is gone, and the gate counts admissions in it: %s", redis.Died()))
	}
}

// stopping says why the stack stops before it stops (the children's
// goodbyes follow), and returns the reason for the exit status.
func stopping(why error) error {
	say("%v", why)
	say("stopping the stack")
	return why
}

// poolLine is "publish×1 compress×3 …".
func poolLine(sizes map[string]int) string {
	var parts []string
	for _, q := range devstack.TaskQueues() {
		parts = append(parts, fmt.Sprintf("%s×%d", q, sizes[q]))
	}
	return strings.Join(parts, " ")
}
