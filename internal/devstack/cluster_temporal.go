package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"go.temporal.io/sdk/client"
)

// TemporalServices are the Temporal server's services, each its own
// process in the cluster profile, in the order they start.
var TemporalServices = []string{"history", "matching", "frontend", "worker"}

// temporalService is one service's ports: its gRPC and membership (ringpop)
// ports, and its own metrics port (each process serves its own).
type temporalService struct {
	Name                      string
	GRPC, Membership, Metrics int
	HTTP                      int // frontend only
}

// temporalConfig is the input of the server's config file.
type temporalConfig struct {
	Shards       int
	DBAddr       string
	DBUser       string
	DBPassword   string
	Services     []temporalService
	Self         temporalService
	DynamicFile  string
	FrontendGRPC int
	Stores       []sqlStore
}

// sqlStore is one of the server's two datastores on the cluster's
// PostgreSQL: they differ only in their database and pool size.
type sqlStore struct {
	Name, Database string
	Conns          int
}

// temporalStores are persistence (defaultStore) and visibility.
var temporalStores = []sqlStore{
	{Name: "postgres-default", Database: "temporal", Conns: 20},
	{Name: "postgres-visibility", Database: "temporal_visibility", Conns: 5},
}

// The server's config, one file per service process (only its metrics port
// differs): PostgreSQL for persistence and visibility, after Temporal's
// development-postgres12 sample. Every process lists every service's ports,
// so each finds the others through the membership ring.
var temporalConfigTemplate = template.Must(template.New("temporal").Funcs(template.FuncMap{"q": yamlString}).Parse(`log:
  stdout: true
  level: warn
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: {{.Shards}}
  datastores:
{{- range .Stores}}
    {{.Name}}:
      sql:
        pluginName: postgres12
        databaseName: {{.Database}}
        connectAddr: {{q $.DBAddr}}
        connectProtocol: tcp
        user: {{q $.DBUser}}
        password: {{q $.DBPassword}}
        maxConns: {{.Conns}}
        maxIdleConns: {{.Conns}}
        maxConnLifetime: 1h
{{- end}}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
  metrics:
    prometheus:
      framework: tally
      timerType: histogram
      listenAddress: "127.0.0.1:{{.Self.Metrics}}"
services:
{{- range .Services}}
  {{.Name}}:
    rpc:
      grpcPort: {{.GRPC}}
      membershipPort: {{.Membership}}
      bindOnLocalHost: true
{{- if .HTTP}}
      httpPort: {{.HTTP}}
{{- end}}
{{- end}}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:{{.FrontendGRPC}}"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: {{q .DynamicFile}}
  pollInterval: 10s
`))

// yamlString quotes s for YAML: a JSON string is a YAML string, whatever
// it holds (a password with quotes or colons).
func yamlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The dynamic config: search attributes are read fresh from the database,
// so a new one is usable at once, not after the cache's refresh.
const temporalDynamicConfig = `system.forceSearchAttributesCacheRefreshOnRead:
  - value: true
`

// TemporalClusterOptions configures the Temporal services of the cluster
// profile.
type TemporalClusterOptions struct {
	ServerBin, SQLToolBin, CLIBin string // defaults: FindTool temporal-server, temporal-sql-tool, temporal
	Dir                           string // configs, one directory per service
	DB                            *Postgres
	DBUser, DBPassword            string
	Shards                        int // history shards (≥ 4)
	Namespace                     string
	Say                           func(format string, args ...any)
	Logs                          func(name string) io.Writer
}

// TemporalCluster is the running services, supervised.
type TemporalCluster struct {
	HostPort  string // the frontend
	HTTPPort  int
	Namespace string
	Metrics   map[string]string // service → its /metrics URL
}

// SetupTemporalSchema creates the temporal and temporal_visibility
// databases and brings their schemas to the server's latest with Temporal's
// SQL tool (the schemas it embeds from the server module's
// schema/postgresql/v12). Safe to run again on an existing cluster.
func SetupTemporalSchema(o TemporalClusterOptions) error {
	for db, schema := range map[string]string{"temporal": "postgresql/v12/temporal", "temporal_visibility": "postgresql/v12/visibility"} {
		for _, step := range [][]string{{"create-database"}, {"setup-schema", "-v", "0.0"}, {"update-schema", "--schema-name", schema}} {
			cmd := exec.Command(o.SQLToolBin, append([]string{"--plugin", "postgres12", "--db", db}, step...)...)
			// The password by environment, never on a command line.
			cmd.Env = append(os.Environ(), "SQL_HOST=127.0.0.1", "SQL_PORT="+strconv.Itoa(o.DB.Port),
				"SQL_USER="+o.DBUser, "SQL_PASSWORD="+o.DBPassword)
			out, err := cmd.CombinedOutput()
			if err != nil && !(step[0] == "create-database" && strings.Contains(string(out), "already exists")) {
				return fmt.Errorf("temporal-sql-tool --db %s %s: %v\n%s", db, step[0], err, out)
			}
		}
		o.Say("schema of %s set up (temporal-sql-tool setup-schema, update-schema %s)", db, schema)
	}
	return nil
}

// StartTemporalCluster writes each service's config and starts the four
// services as separate supervised processes (a killed one comes back on
// the same ports), then waits for the frontend, creates the namespace and
// registers every product's search attributes with the temporal CLI.
func StartTemporalCluster(ctx context.Context, sup *Supervisor, o TemporalClusterOptions) (*TemporalCluster, error) {
	if o.Shards < 4 {
		return nil, fmt.Errorf("history shards: %d, want 4 or more", o.Shards)
	}
	dyn := filepath.Join(o.Dir, "dynamicconfig.yaml")
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(dyn, []byte(temporalDynamicConfig), 0o644); err != nil {
		return nil, err
	}
	var services []temporalService
	for _, name := range TemporalServices {
		s := temporalService{Name: name}
		ports := []*int{&s.GRPC, &s.Metrics}
		if name == "frontend" {
			ports = append(ports, &s.HTTP)
		}
		for _, p := range ports {
			port, err := choosePort()
			if err != nil {
				return nil, err
			}
			*p = port
		}
		// The membership table keeps the port as a smallint: a port the
		// kernel hands out (32768 and up) fails every heartbeat.
		var err error
		if s.Membership, err = freePortBelow(32768); err != nil {
			return nil, err
		}
		services = append(services, s)
	}
	frontend := services[slices.IndexFunc(services, func(s temporalService) bool { return s.Name == "frontend" })]
	tc := &TemporalCluster{HostPort: net.JoinHostPort("127.0.0.1", strconv.Itoa(frontend.GRPC)), HTTPPort: frontend.HTTP,
		Namespace: o.Namespace, Metrics: map[string]string{}}
	for _, s := range services {
		dir := filepath.Join(o.Dir, s.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil { // the file holds the database password
			return nil, err
		}
		f, err := os.OpenFile(filepath.Join(dir, "development.yaml"), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		err = temporalConfigTemplate.Execute(f, temporalConfig{Shards: o.Shards, DBAddr: o.DB.Addr, DBUser: o.DBUser,
			DBPassword: o.DBPassword, Services: services, Self: s, DynamicFile: dyn, FrontendGRPC: frontend.GRPC, Stores: temporalStores})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		if err := sup.Start(Child{Name: "temporal-" + s.Name, Path: o.ServerBin,
			Args: []string{"--root", "/", "--config", dir, "--env", "development", "--allow-no-auth", "start", "--service", s.Name},
			Env:  os.Environ(), Logs: o.Logs("temporal-" + s.Name)}); err != nil {
			return nil, err
		}
		tc.Metrics[s.Name] = fmt.Sprintf("http://127.0.0.1:%d/metrics", s.Metrics)
		o.Say("started Temporal %s (gRPC 127.0.0.1:%d, membership %d)", s.Name, s.GRPC, s.Membership)
	}
	if err := tc.setup(ctx, o); err != nil {
		return nil, err
	}
	return tc, nil
}

// setup waits for the frontend, then creates the namespace and the search
// attributes (both kept when they exist) and waits until they are listed.
func (tc *TemporalCluster) setup(ctx context.Context, o TemporalClusterOptions) error {
	cli := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, o.CLIBin, append(args, "--address", tc.HostPort)...)
		return cmd.CombinedOutput()
	}
	var last string
	within := func(d time.Duration, what string, try func() (bool, string)) error {
		deadline := time.Now().Add(d)
		for {
			ok, why := try()
			if ok {
				return nil
			}
			last = why
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: not within %s: %s", what, d, last)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}
	if err := within(3*time.Minute, "the Temporal frontend answers", func() (bool, string) {
		c, err := client.Dial(client.Options{HostPort: tc.HostPort, Namespace: "temporal-system", Logger: quietLogger{}})
		if err != nil {
			return false, err.Error()
		}
		defer c.Close()
		_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err == nil, fmt.Sprint(err)
	}); err != nil {
		return err
	}
	if err := within(2*time.Minute, "namespace "+tc.Namespace, func() (bool, string) {
		if _, err := cli("operator", "namespace", "describe", "--namespace", tc.Namespace); err == nil {
			return true, ""
		}
		out, err := cli("operator", "namespace", "create", "--namespace", tc.Namespace, "--retention", "72h")
		return false, fmt.Sprintf("%v: %s", err, strings.TrimSpace(string(out)))
	}); err != nil {
		return err
	}
	o.Say("namespace %s ready", tc.Namespace)
	attrs, err := SearchAttributes()
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		if err := within(time.Minute, "search attribute "+name, func() (bool, string) {
			out, err := cli("operator", "search-attribute", "list", "--namespace", tc.Namespace)
			if err == nil && listsAttribute(string(out), name) {
				return true, ""
			}
			out, err = cli("operator", "search-attribute", "create", "--namespace", tc.Namespace, "--name", name, "--type", attrs[name])
			return false, fmt.Sprintf("%v: %s", err, strings.TrimSpace(string(out)))
		}); err != nil {
			return err
		}
	}
	o.Say("search attributes registered in SQL visibility: %s", strings.Join(slices.Sorted(maps.Keys(attrs)), ", "))
	return nil
}

// freePortBelow finds a free loopback port under limit, outside the
// kernel's ephemeral range that FreePort draws from.
func freePortBelow(limit int) (int, error) {
	for range 200 {
		port := 20000 + rand.IntN(limit-20000)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port from 20000 to %d", limit)
}

// listsAttribute reports whether the CLI's search attribute listing has a
// row named name: a substring would find Version in the built-in
// TemporalWorkerDeploymentVersion and never create it.
func listsAttribute(listing, name string) bool {
	for _, line := range strings.Split(listing, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return true
		}
	}
	return false
}
