package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// The cluster profile (`make cluster`, cmd/cluster): the system as it runs
// beyond one machine, here on one. Temporal's services as separate
// processes on PostgreSQL, MinIO in distributed mode behind a load
// balancer, a Redis per data center and the Anywhere one behind Sentinel
// (a primary, a replica, three Sentinels), and two
// processes of every worker pool, two edges and two gates per data center,
// all connecting through TEMPORAL_ADDRESS and S3_ENDPOINT.

// DataCenters are the cluster's two data centers; each has its own Redis,
// edge and two gates.
var DataCenters = []string{"dc1", "dc2"}

// ClusterProcessesPerPool is how many processes each worker pool runs.
const ClusterProcessesPerPool = 2

// ClusterOptions configures StartCluster.
type ClusterOptions struct {
	DataDir string // .data/cluster
	BinDir  string // the products' binaries (make build)
	Shards  int    // history shards; 0: 4
	// DBPassword is the PostgreSQL password of the temporal user
	// (TEMPORAL_DB_PASSWORD); it goes only into the server's config files.
	DBPassword           string
	AccessKey, SecretKey string // MinIO's root user, the products' S3 keys
	CatalogDir           string // the publish pool's catalog
	// ProductEnv is added to every product process (a test's registry).
	ProductEnv []string
	Headless   bool // no Web UI
	Say        func(format string, args ...any)
	Logs       func(name string) io.Writer
}

// Gate is one gate process of the cluster.
type Gate struct {
	Name, DataCenter string
	URL, HealthURL   string // http://127.0.0.1:port
}

// Cluster is a running cluster profile.
type Cluster struct {
	o        ClusterOptions
	Postgres *Postgres
	Temporal *TemporalCluster
	MinIO    *DistributedMinIO
	Redis    map[string]*Redis // dc1, dc2
	// Anywhere is the Anywhere scope's Redis: a primary and a replica
	// behind three Sentinels, which the gates follow through a failover.
	Anywhere *RedisSentinel
	UI       *Process
	UIURL    string
	// Sup runs the products' processes, Infra Temporal's services and the
	// Web UI: the products stop (and drain) while Temporal still runs.
	Sup, Infra *Supervisor
	Edges      []string // http://127.0.0.1:port, one per data center
	Gates      []Gate
	Workers    []string // worker process names: publish-1 …
	redisDir   string
}

// ProcessNames are every supervised process of the products and of
// Temporal, as make cluster names them (deploy/ checks the compose file
// against these).
func (c *Cluster) ProcessNames() []string {
	var out []string
	for _, s := range []*Supervisor{c.Infra, c.Sup} {
		s.mu.Lock()
		out = append(out, s.order...)
		s.mu.Unlock()
	}
	return out
}

// supervisorOf is the supervisor running the named process.
func (c *Cluster) supervisorOf(name string) *Supervisor {
	c.Infra.mu.Lock()
	defer c.Infra.mu.Unlock()
	if _, ok := c.Infra.children[name]; ok {
		return c.Infra
	}
	return c.Sup
}

// StartCluster starts everything and returns once the products' processes
// run. Stop stops it all; a failed start stops what it had started.
func StartCluster(ctx context.Context, o ClusterOptions) (c *Cluster, err error) {
	if o.Shards == 0 {
		o.Shards = 4
	}
	if o.Say == nil {
		o.Say = func(string, ...any) {}
	}
	if o.Logs == nil {
		o.Logs = func(string) io.Writer { return io.Discard }
	}
	if o.DBPassword == "" {
		return nil, errors.New("TEMPORAL_DB_PASSWORD: empty; the cluster's PostgreSQL needs a password")
	}
	tools := map[string]string{}
	for _, name := range []string{"temporal-server", "temporal-sql-tool", "temporal", "minio"} {
		if tools[name], err = FindTool(name); err != nil {
			return nil, fmt.Errorf("%w (make cluster builds it)", err)
		}
	}
	if !o.Headless {
		if tools["ui-server"], err = FindTool("ui-server"); err != nil {
			return nil, fmt.Errorf("%w (make cluster builds it)", err)
		}
	}
	c = &Cluster{o: o, Redis: map[string]*Redis{}, redisDir: filepath.Join(o.DataDir, "redis")}
	c.Sup = NewSupervisor(SupervisorOptions{Say: o.Say})
	c.Infra = NewSupervisor(SupervisorOptions{Say: o.Say})
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	for _, d := range []string{o.DataDir, c.redisDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return c, err
		}
	}
	if err := chownPostgres(o.DataDir); err != nil { // postgres must reach .data/cluster/pg
		return c, err
	}

	const dbUser = "temporal"
	c.Postgres, err = StartPostgres(ctx, PostgresOptions{Dir: filepath.Join(o.DataDir, "pg"), User: dbUser, Password: o.DBPassword, Logs: o.Logs("postgresql")})
	if err != nil {
		return c, err
	}
	o.Say("started PostgreSQL %s on %s (data in %s, run as the postgres user)", c.Postgres.Version, c.Postgres.Addr, filepath.Join(o.DataDir, "pg"))
	to := TemporalClusterOptions{ServerBin: tools["temporal-server"], SQLToolBin: tools["temporal-sql-tool"], CLIBin: tools["temporal"],
		Dir: filepath.Join(o.DataDir, "temporal"), DB: c.Postgres, DBUser: dbUser, DBPassword: o.DBPassword,
		Shards: o.Shards, Namespace: "default", Say: o.Say, Logs: o.Logs}
	if err := SetupTemporalSchema(to); err != nil {
		return c, err
	}
	if c.Temporal, err = StartTemporalCluster(ctx, c.Infra, to); err != nil {
		return c, err
	}
	o.Say("Temporal frontend at %s (%d history shards)", c.Temporal.HostPort, o.Shards)
	if !o.Headless {
		if err := c.startUI(ctx, tools["ui-server"]); err != nil {
			return c, err
		}
		o.Say("started the Temporal Web UI at %s (pointed at %s)", c.UIURL, c.Temporal.HostPort)
	}

	c.MinIO, err = StartDistributedMinIO(ctx, DistributedMinIOOptions{Bin: tools["minio"], Dir: filepath.Join(o.DataDir, "minio"), Nodes: 4,
		AccessKey: o.AccessKey, SecretKey: o.SecretKey, Logs: o.Logs})
	if err != nil {
		return c, err
	}
	o.Say("started MinIO in distributed mode: 4 nodes, one drive each, one erasure set; S3 endpoint %s (a balancer over the nodes)", c.MinIO.Endpoint)
	for _, name := range DataCenters {
		r, err := StartRedis(ctx, RedisOptions{Dir: c.redisDir, Logs: o.Logs("redis-" + name)})
		if err != nil {
			return c, err
		}
		c.Redis[name] = r
		o.Say("started Redis %s at %s", name, r.Addr)
	}
	anywhereDir := filepath.Join(c.redisDir, "anywhere")
	if err := os.MkdirAll(anywhereDir, 0o755); err != nil {
		return c, err
	}
	c.Anywhere, err = StartRedisSentinel(ctx, RedisSentinelOptions{Dir: anywhereDir, Logs: o.Logs("redis-anywhere"), Master: "anywhere", DownAfter: 3 * time.Second})
	if err != nil {
		return c, err
	}
	o.Say("started Redis anywhere: primary %s, replica %s, Sentinels %s (the gates' %s)", c.Anywhere.Servers[0].Addr, c.Anywhere.Servers[1].Addr,
		strings.Join(c.Anywhere.SentinelAddrs, ","), c.Anywhere.URL)

	store, err := s3.New(s3.Config{Endpoint: c.MinIO.Endpoint, AccessKey: o.AccessKey, SecretKey: o.SecretKey})
	if err != nil {
		return c, err
	}
	b := metadata.DefaultBuckets
	if err := objectstore.EnsureBuckets(ctx, store, b.Files, b.Mirror, b.Meta, b.MirrorMeta, b.Incoming); err != nil {
		return c, err
	}
	// The shared key files (Migrate's sealed credentials, the payload
	// codec, the gates' cookie): every process reads the same ones.
	for _, src := range keyring.Sources {
		if _, _, err := keyring.EnsureDevFile(src, o.DataDir); err != nil {
			return c, fmt.Errorf("keys for %s: %w", src.Env, err)
		}
	}
	if err := c.startProducts(); err != nil {
		return c, err
	}
	return c, nil
}

func freeAddr() (string, error) {
	p, err := choosePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// startProducts starts the processes productProcesses lays out, with the
// cluster's addresses: the variables a deployment sets (docker-compose.yml).
func (c *Cluster) startProducts() error {
	redis := map[string]string{}
	for name, r := range c.Redis {
		redis[name] = r.URL
	}
	redis["anywhere"] = c.Anywhere.URL
	procs, err := productProcesses(clusterAddrs{temporal: c.Temporal.HostPort, namespace: c.Temporal.Namespace,
		s3: c.MinIO.Endpoint, accessKey: c.o.AccessKey, secretKey: c.o.SecretKey,
		codecKeysFile: keyring.Codec.DevPath(c.o.DataDir), cookieKeysFile: keyring.GateCookie.DevPath(c.o.DataDir),
		catalogDir: c.o.CatalogDir, redis: redis, free: freeAddr})
	if err != nil {
		return err
	}
	for _, p := range procs {
		env := append(append(os.Environ(), p.Env...), c.o.ProductEnv...)
		if err := c.Sup.Start(Child{Name: p.Name, Path: filepath.Join(c.o.BinDir, p.Bin), Env: env, Logs: c.o.Logs(p.Name)}); err != nil {
			return fmt.Errorf("%w (built by `make build`?)", err)
		}
		switch p.Bin {
		case "edge":
			c.Edges = append(c.Edges, "http://"+envValue(p.Env, "EDGE_ADDR"))
		case "gate":
			c.Gates = append(c.Gates, Gate{Name: p.Name, DataCenter: envValue(p.Env, "GATE_DATA_CENTER"),
				URL: "http://" + envValue(p.Env, "GATE_ADDR"), HealthURL: "http://" + envValue(p.Env, "GATE_HEALTH_ADDR")})
		default:
			c.Workers = append(c.Workers, p.Name)
		}
	}
	c.o.Say("started the worker pools (%s, %d processes each), an edge and two gates in each of %s",
		strings.Join(TaskQueues(), ", "), ClusterProcessesPerPool, strings.Join(DataCenters, ", "))
	return c.waitProducts()
}

// waitProducts waits until every edge and gate answers /healthz.
func (c *Cluster) waitProducts() error {
	var urls []string
	for _, e := range c.Edges {
		urls = append(urls, e+"/healthz")
	}
	for _, g := range c.Gates {
		urls = append(urls, g.HealthURL+"/healthz")
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, u := range urls {
		for {
			resp, err := healthClient.Get(u)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not healthy after 3m: %v", u, err)
			}
			select {
			case err := <-c.Sup.Failed():
				return err
			case err := <-c.Infra.Failed():
				return err
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return nil
}

// startUI writes the Web UI's config and starts ui-server on a free port.
func (c *Cluster) startUI(ctx context.Context, bin string) error {
	port, err := choosePort()
	if err != nil {
		return err
	}
	dir := filepath.Join(c.o.DataDir, "ui")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c.UIURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := fmt.Sprintf("temporalGrpcAddress: %s\nhost: 127.0.0.1\nport: %d\nenableUi: true\ndefaultNamespace: default\nnotifyOnNewVersion: false\ncors:\n  allowOrigins:\n    - %s\n",
		c.Temporal.HostPort, port, c.UIURL)
	if err := os.WriteFile(filepath.Join(dir, "development.yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	if err := c.Infra.Start(Child{Name: "temporal-ui", Path: bin, Args: []string{"--root", "/", "--config", dir, "--env", "development", "start"},
		Logs: c.o.Logs("temporal-ui")}); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := healthClient.Get(c.UIURL + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Temporal Web UI at %s not ready after 1m: %v", c.UIURL, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Kill ends a supervised process (a Temporal service, a worker, an edge,
// a gate) with SIGKILL, as a crash would; the supervisor starts it again
// on the same ports. It returns the killed pid.
func (c *Cluster) Kill(name string) (int, error) {
	pid := c.supervisorOf(name).Pid(name)
	if pid == 0 {
		return 0, fmt.Errorf("%s is not running", name)
	}
	return pid, syscall.Kill(-pid, syscall.SIGKILL)
}

// StopRedis stops one data center's Redis (dc1, dc2); StartRedisAgain starts
// it again on its port.
func (c *Cluster) StopRedis(name string) error { return c.Redis[name].Stop(5 * time.Second) }

// StartRedisAgain starts a stopped Redis again on its own port.
func (c *Cluster) StartRedisAgain(ctx context.Context, name string) error {
	_, port, _ := net.SplitHostPort(c.Redis[name].Addr)
	p, _ := strconv.Atoi(port)
	r, err := StartRedis(ctx, RedisOptions{Dir: c.redisDir, Port: p, Logs: c.o.Logs("redis-" + name)})
	if err != nil {
		return err
	}
	c.Redis[name] = r
	return nil
}

// Stop stops the products first (they drain), then Temporal, then the
// stores and PostgreSQL.
func (c *Cluster) Stop() {
	if c.Sup != nil {
		c.Sup.Stop(2*time.Minute + 30*time.Second)
	}
	if c.Infra != nil {
		c.Infra.Stop(30 * time.Second)
	}
	if c.MinIO != nil {
		c.MinIO.Stop()
	}
	for _, r := range c.Redis {
		_ = r.Stop(5 * time.Second)
	}
	if c.Anywhere != nil {
		c.Anywhere.Stop(5 * time.Second)
	}
	if c.Postgres != nil {
		_ = c.Postgres.Stop(30 * time.Second)
	}
}

// LogFiles gives each process its own log file in dir (name.log, appended
// across runs); the returned func closes them all.
func LogFiles(dir string) (func(name string) io.Writer, func()) {
	var mu sync.Mutex
	files := map[string]*os.File{}
	open := func(name string) io.Writer {
		mu.Lock()
		defer mu.Unlock()
		if f, ok := files[name]; ok {
			return f
		}
		f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return io.Discard
		}
		files[name] = f
		return f
	}
	return open, func() {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range files {
			_ = f.Close()
		}
	}
}
