package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/console"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/payloadcodec"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/schedules"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// StackConfig is what `make run` is configured by: the environment
// variables cmd/devstack documents, with their defaults.
type StackConfig struct {
	Root, DataDir, BinDir, IP, CatalogDir                            string
	TemporalPort, UIPort, MinIOPort, ConsolePort, RedisPort, OpsBase int
	EdgeAddr, EdgeMetricsAddr, GateAddr, GateHealthAddr, CodecAddr   string
	GateDataCenter, GateHosts                                        string
	ConsoleAddr                                                      string // CONSOLE_ADDR: edgeflow's console (ConsolePort is MinIO's)
	AccessKey, SecretKey                                             string
	UpdateEvery                                                      time.Duration
	Codec                                                            bool           // PAYLOAD_CODEC=on
	Pools                                                            map[string]int // processes per task queue
}

// LoadStackConfig reads the stack's settings from the environment; root is
// the repository's root. An invalid value is an error naming its variable.
func LoadStackConfig(root string) (StackConfig, error) {
	ip := config.Env("BIND_IP", "127.0.0.1")
	c := StackConfig{
		Root:           root,
		DataDir:        config.Env("DATA_DIR", filepath.Join(root, ".data")),
		BinDir:         config.Env("BIN_DIR", filepath.Join(root, "bin")),
		IP:             ip,
		CatalogDir:     config.Env("CATALOG_DIR", filepath.Join(root, "catalog")),
		TemporalPort:   config.EnvInt("TEMPORAL_PORT", 7233),
		UIPort:         config.EnvInt("TEMPORAL_UI_PORT", 8233),
		MinIOPort:      config.EnvInt("MINIO_PORT", 9000),
		ConsolePort:    config.EnvInt("MINIO_CONSOLE_PORT", 9001),
		RedisPort:      config.EnvInt("REDIS_PORT", 6379),
		OpsBase:        config.EnvInt("OPS_PORT_BASE", DefaultOpsPortBase),
		EdgeAddr:       config.Env("EDGE_ADDR", net.JoinHostPort(ip, "8080")),
		GateAddr:       config.Env("GATE_ADDR", net.JoinHostPort(ip, "8088")),
		GateHealthAddr: config.Env("GATE_HEALTH_ADDR", net.JoinHostPort(ip, "8098")),
		CodecAddr:      config.Env("CODEC_SERVER_ADDR", net.JoinHostPort(ip, "8234")),
		ConsoleAddr:    config.Env("CONSOLE_ADDR", net.JoinHostPort(ip, "8070")),
		GateDataCenter: config.Env("GATE_DATA_CENTER", "dev"),
		GateHosts:      config.Env("GATE_HOSTS", "127.0.0.1,localhost"),
		AccessKey:      config.Env("S3_ACCESS_KEY", "edgeflow"),
		SecretKey:      config.Env("S3_SECRET_KEY", "edgeflow-dev-secret"),
	}
	c.EdgeMetricsAddr = config.Env("EDGE_METRICS_ADDR", net.JoinHostPort(ip, strconv.Itoa(c.OpsBase-1)))
	var err error
	if c.UpdateEvery, err = time.ParseDuration(config.Env("UPDATE_EVERY", "10m")); err != nil {
		return StackConfig{}, fmt.Errorf("UPDATE_EVERY: %w", err)
	}
	if c.Codec, err = payloadcodec.Enabled(os.Getenv); err != nil {
		return StackConfig{}, err
	}
	if c.Pools, err = PoolSizes(TaskQueues(), os.Getenv); err != nil {
		return StackConfig{}, err
	}
	return c, nil
}

// CheckPorts fails, naming the port's variable, when a port the stack
// binds is taken: most likely by another stack.
func (c StackConfig) CheckPorts() error {
	for _, p := range []struct {
		name, env string
		port      int
	}{{"Temporal", "TEMPORAL_PORT", c.TemporalPort}, {"Temporal Web UI", "TEMPORAL_UI_PORT", c.UIPort}, {"MinIO", "MINIO_PORT", c.MinIOPort},
		{"MinIO console", "MINIO_CONSOLE_PORT", c.ConsolePort}, {"Redis", "REDIS_PORT", c.RedisPort}} {
		if l, err := net.Listen("tcp", net.JoinHostPort(c.IP, strconv.Itoa(p.port))); err != nil {
			return fmt.Errorf("%s port %d is taken (is another stack running?): set %s to another port; see README", p.name, p.port, p.env)
		} else {
			l.Close()
		}
	}
	return nil
}

// Output is where the stack talks: Say for its own lines, Logs for a
// child's output (name and an ANSI colour in front of each line).
type Output struct {
	Say  func(format string, args ...any)
	Logs func(name, color string) io.Writer
}

// stopSaying stops p at the stack's exit and says so when it had to be
// killed: a server that outlived its grace may have left its data dir
// half-written, and the next `make run` starts from it.
func stopSaying(o Output, p *Process, grace time.Duration) {
	if err := p.Stop(grace); err != nil {
		o.Say("%v", err)
	}
}

// RunStack runs the whole system on one machine until ctx is cancelled
// (see cmd/devstack): Temporal, MinIO and Redis, the buckets and key files,
// the worker pools, the edge and the gate in front of a demo origin, the
// package-update Schedule, npm's registry follower and the demo room. It
// supervises the children and stops them in order when it returns.
func RunStack(ctx context.Context, c StackConfig, o Output) error {
	if err := c.CheckPorts(); err != nil {
		return err
	}
	for _, d := range []string{c.DataDir, filepath.Join(c.DataDir, "minio"), filepath.Join(c.DataDir, "redis")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// The payload codec (PAYLOAD_CODEC=on): every process encrypts what it
	// sends to Temporal, and the Web UI decodes through the codec server.
	var uiCodec string
	if c.Codec {
		uiCodec = "http://" + c.CodecAddr
	}
	// Development keys (Migrate's sealed credentials, the payload codec,
	// the gate's cookie), created once: every process run from the repo
	// finds the same ones.
	for _, src := range keyring.Sources {
		path, created, err := keyring.EnsureDevFile(src, c.DataDir)
		if err != nil {
			return fmt.Errorf("development keys for %s: %w", src.Env, err)
		}
		if created {
			o.Say("created the development key file %s (%s); production sets %s", path, src.Env, src.Env)
		}
	}

	// The console's API tokens, unless set (CONSOLE_TOKENS or _FILE): the
	// development file, created once; its path is said, never a secret.
	tokensFrom := "CONSOLE_TOKENS"
	if os.Getenv("CONSOLE_TOKENS") == "" {
		if tokensFrom = os.Getenv("CONSOLE_TOKENS_FILE"); tokensFrom == "" {
			tokensFrom = console.DevTokensPath(c.DataDir)
			created, err := console.EnsureDevTokens(tokensFrom)
			if err != nil {
				return fmt.Errorf("console tokens: %w", err)
			}
			if created {
				o.Say("created the console's development token file %s; production sets CONSOLE_TOKENS or CONSOLE_TOKENS_FILE", tokensFrom)
			}
		}
	}

	o.Say("starting Temporal dev server (data in %s)", c.DataDir)
	temporal, err := StartTemporal(ctx, TemporalOptions{
		DBFile: filepath.Join(c.DataDir, "temporal.db"), IP: c.IP, Port: c.TemporalPort, UIPort: c.UIPort,
		UICodecEndpoint: uiCodec, Logs: o.Logs("temporal", "36"),
	})
	if err != nil {
		return err
	}
	defer stopSaying(o, temporal.Process, 30*time.Second)
	o.Say("starting MinIO")
	minio, err := StartMinIO(ctx, MinIOOptions{
		DataDir: filepath.Join(c.DataDir, "minio"), IP: c.IP, Port: c.MinIOPort, ConsolePort: c.ConsolePort,
		AccessKey: c.AccessKey, SecretKey: c.SecretKey, Logs: o.Logs("minio", "35"),
	})
	if err != nil {
		return err
	}
	defer stopSaying(o, minio.Process, 30*time.Second)
	o.Say("starting Redis (the gates' shared counters)")
	redis, err := StartRedis(ctx, RedisOptions{IP: c.IP, Port: c.RedisPort, Dir: filepath.Join(c.DataDir, "redis"), Logs: o.Logs("redis", "91")})
	if err != nil {
		return err
	}
	defer stopSaying(o, redis.Process, 30*time.Second)
	// The site behind the demo gate.
	originLn, err := net.Listen("tcp", net.JoinHostPort(c.IP, "0"))
	if err != nil {
		return err
	}
	origin := &http.Server{Handler: DemoOrigin(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := origin.Serve(originLn); !errors.Is(err, http.ErrServerClosed) {
			o.Say("the demo origin stopped serving: %v", err)
		}
	}()
	defer func() { _ = origin.Close() }() // at exit: nothing it serves is kept

	store, err := s3.New(s3.Config{Endpoint: minio.Endpoint, AccessKey: c.AccessKey, SecretKey: c.SecretKey})
	if err != nil {
		return err
	}
	b := metadata.DefaultBuckets
	if err := objectstore.EnsureBuckets(ctx, store, b.Files, b.Mirror, b.Meta, b.MirrorMeta, b.Incoming); err != nil {
		return err
	}

	env := append(os.Environ(), "DATA_DIR="+c.DataDir,
		"TEMPORAL_ADDRESS="+temporal.HostPort, "S3_ENDPOINT="+minio.Endpoint,
		"S3_ACCESS_KEY="+c.AccessKey, "S3_SECRET_KEY="+c.SecretKey,
		"CATALOG_DIR="+c.CatalogDir,
		// The edge publishes a catalog version on its first request.
		"EDGE_CATALOG_DIR="+c.CatalogDir,
		"EDGE_ADDR="+c.EdgeAddr,
		"GATE_ADDR="+c.GateAddr, "GATE_HEALTH_ADDR="+c.GateHealthAddr, "GATE_ORIGIN=http://"+originLn.Addr().String(),
		"GATE_DATA_CENTER="+c.GateDataCenter, "GATE_REDIS_URL="+redis.URL,
		// The console reads the rooms' live view where the gate writes it.
		"ADMIT_REDIS_URL="+redis.URL,
		// The names the demo gate is reached by; a room naming another
		// host is then not bypassed by a request naming a third.
		"GATE_HOSTS="+c.GateHosts,
	)
	// Every worker pool (bin/<queue>, built from workers/<queue>), as many
	// processes as asked, then the HTTP processes; each on its own ops
	// port (/healthz, /metrics), kept across restarts.
	extra := []Planned{{Name: "gate", Bin: filepath.Join(c.BinDir, "gate"), Addr: c.GateAddr, MetricsURL: "http://" + c.GateHealthAddr + "/metrics"},
		{Name: "console", Bin: filepath.Join(c.BinDir, "console"), Addr: c.ConsoleAddr, Env: []string{"CONSOLE_ADDR=" + c.ConsoleAddr}}}
	if c.Codec {
		extra = append(extra, Planned{Name: "codec", Bin: filepath.Join(c.BinDir, "codec-server"), Addr: c.CodecAddr,
			Env: []string{"CODEC_SERVER_ADDR=" + c.CodecAddr, "CODEC_SERVER_UI_ORIGINS=" + temporal.UIURL}})
	}
	procs, err := PlanProcesses(TaskQueues(), c.Pools, c.IP, c.BinDir, c.OpsBase, c.EdgeMetricsAddr, extra...)
	if err != nil {
		return err
	}
	sup := NewSupervisor(SupervisorOptions{Say: o.Say})
	// Registered before the first start, so a child that fails to start
	// never leaves the ones before it running.
	defer func() {
		o.Say("stopping: edge, gate and workers drain in-flight work first")
		// Longer than the workers' own stop timeout, so they finish draining.
		sup.Stop(2*time.Minute + 30*time.Second)
	}()
	colors := []string{"32", "33", "34", "31", "92", "93", "94", "95"}
	for i, p := range procs {
		child := Child{Name: p.Name, Path: p.Bin, Env: append(slices.Clip(env), p.Env...),
			Logs: o.Logs(p.Name, colors[i%len(colors)])}
		if err := sup.Start(child); err != nil {
			return fmt.Errorf("%w (built by `make build`?)", err)
		}
	}

	// The stack's own client shares the workers' settings (the codec).
	tc := config.Temporal{HostPort: temporal.HostPort, Namespace: temporal.Namespace}
	tcl, err := tc.Dial(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer tcl.Close()
	created, err := schedules.Upsert(ctx, tcl, contract.UpdatesScheduleID, c.UpdateEvery)
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	if err := tcl.ScheduleClient().GetHandle(ctx, contract.UpdatesScheduleID).Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		return fmt.Errorf("trigger schedule: %w", err)
	}
	verb := "updated"
	if created {
		verb = "created"
	}
	o.Say("schedule %q %s (every %s) and triggered: the sample catalog publishes within a minute or two", contract.UpdatesScheduleID, verb, c.UpdateEvery)
	// The audit is not triggered: it has nothing to find before the first
	// publish, and an operator's pause of it is kept.
	created, err = schedules.Upsert(ctx, tcl, contract.AuditScheduleID, schedules.DefaultAuditEvery)
	if err != nil {
		return fmt.Errorf("audit schedule: %w", err)
	}
	verb = "updated"
	if created {
		verb = "created"
	}
	o.Say("schedule %q %s (every %s: a 5%% sample of published files, repairing)", contract.AuditScheduleID, verb, schedules.DefaultAuditEvery)
	// The follower finds npm releases within seconds; the Schedule above
	// stays, the safety net for a feed that stalls.
	fopts, ftype, fin := pubclient.FollowerStart(contract.RegistryNPM)
	if _, err := tcl.ExecuteWorkflow(ctx, fopts, ftype, fin); err != nil {
		return fmt.Errorf("registry follower: %w", err)
	}
	o.Say("registry follower %q follows npm's changes feed (NPM_CHANGES_URL, default %s): a catalog package's release is checked at once", fopts.ID, registry.DefaultChangesURL)
	demo := DemoRoom()
	switch _, err := (roomclient.Client{C: tcl}).Create(ctx, demo, roomclient.CreateOptions{}); {
	case err == nil:
		o.Say("waiting room %q created on every path of the gate (%d active users, %d new a minute)", demo.Name, demo.TotalActiveUsers, demo.NewUsersPerMinute)
	case errors.Is(err, roomclient.ErrExists):
		o.Say("waiting room %q kept as it is (go run ./starters/room get %s)", demo.Name, demo.Name)
	default:
		return fmt.Errorf("demo room: %w", err)
	}
	o.announce(c, temporal.UIURL, minio.ConsoleURL, tokensFrom, procs)

	select {
	case <-ctx.Done():
		// Children run in their own process groups, so devstack must outlive
		// them: further Ctrl-Cs are absorbed until everything has stopped.
		return nil
	case err := <-sup.Failed():
		return o.stopping(fmt.Errorf("%w", err))
	case <-temporal.Ended():
		return o.stopping(fmt.Errorf("the Temporal dev server is gone, and nothing runs without it: %s", temporal.Died()))
	case <-minio.Ended():
		return o.stopping(fmt.Errorf("MinIO is gone, and the workers and the edge cannot work without it: %s", minio.Died()))
	case <-redis.Ended():
		return o.stopping(fmt.Errorf("the Redis server is gone, and the gate counts admissions in it: %s", redis.Died()))
	}
}

// announce tells where everything is and what to try.
func (o Output) announce(c StackConfig, uiURL, consoleURL, tokensFrom string, procs []Planned) {
	o.Say("")
	o.Say("  Temporal Web UI  %s  (filter: Package = \"mitt\")", uiURL)
	o.Say("  Edge (CDN + API) http://%s", c.EdgeAddr)
	o.Say("  Gate (demo room) http://%s  (status http://%s/status)", c.GateAddr, c.GateHealthAddr)
	o.Say("  MinIO console    %s  (user %s, password from S3_SECRET_KEY)", consoleURL, c.AccessKey)
	o.Say("  Console API      http://%s/api/v1/  (bearer token: %s; docs/console.md)", c.ConsoleAddr, tokensFrom)
	o.Say("  Console          http://%s/  (sign in with a token's secret from the same place)", c.ConsoleAddr)
	o.Say("")
	o.Say("  Metrics (Prometheus), one per process:")
	for _, p := range procs {
		if p.MetricsURL != "" {
			o.Say("    %-12s %s", p.Name, p.MetricsURL)
		}
	}
	if c.Codec {
		o.Say("  Payload codec on: history holds ciphertext; the Web UI decodes through http://%s", c.CodecAddr)
		o.Say("    (the temporal CLI too: temporal workflow show -w ID --codec-endpoint http://%s)", c.CodecAddr)
	}
	o.Say("  Pools: %s (scale one: COMPRESS_WORKERS=3 make run, or WORKERS=compress=3,publish=2)", poolLine(c.Pools))
	o.Say("")
	o.Say("try: curl http://%s/libraries/mitt   |  open http://%s/", c.EdgeAddr, c.EdgeAddr)
	o.Say("     go run ./starters/publish --package nprogress --version 0.2.0 --follow")
	o.Say("     go run ./starters/schedule describe")
	o.Say("     go run ./starters/migrate list     (bucket-to-bucket copies: README, Migrate)")
	o.Say("     for i in 1 2 3 4 5 6 7; do curl -s -o /dev/null -w '%%{http_code} ' http://%s/; done   # the 6th is queued", c.GateAddr)
	o.Say("     go run ./starters/room status demo --follow")
	if tokensFrom != "CONSOLE_TOKENS" {
		o.Say("     curl -H \"Authorization: Bearer $(grep -v '^#' %s | head -1 | cut -d: -f2)\" http://%s/api/v1/waiting_rooms", tokensFrom, c.ConsoleAddr)
	}
	o.Say("Ctrl-C stops everything; the next `make run` reuses the data in %s", c.DataDir)

	o.Say("A worker, the edge or the gate that dies is restarted; only Temporal, MinIO or Redis dying, or a crash loop, stops the stack.")
}

// stopping says why the stack stops before it stops (the children's
// goodbyes follow), and returns the reason for the exit status.
func (o Output) stopping(why error) error {
	o.Say("%v", why)
	o.Say("stopping the stack")
	return why
}

// poolLine is "publish×1 compress×3 …".
func poolLine(sizes map[string]int) string {
	var parts []string
	for _, q := range TaskQueues() {
		parts = append(parts, fmt.Sprintf("%s×%d", q, sizes[q]))
	}
	return strings.Join(parts, " ")
}
