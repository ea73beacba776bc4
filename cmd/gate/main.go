// Command gate is the waiting room in front of an origin: a reverse proxy
// that decides for each request, on the room's snapshot and with no round
// trip to a central service, whether to pass it to the origin or show the
// waiting room. Its logic is internal/admit/gate, its wiring
// internal/admit/gatehost; this is the flags.
//
//	gate --origin http://127.0.0.1:3000 --hosts shop.example.com --data-center ams [--redis-url redis://…] [--strategy counters+borrow]
//	gate keygen [--file PATH]     a new cookie key (GATE_COOKIE_KEYS's "id:base64")
//
// Settings come from flags, defaulting from the environment (GATE_*, and
// TEMPORAL_* like every process). The cookie keys come from
// GATE_COOKIE_KEYS, the file GATE_COOKIE_KEYS_FILE, or the development key
// file `make run` creates; every gate of a room must hold the same keys.
package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/admit/gatehost"
	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

func main() { cli.Execute(newRootCommand(os.Stdout, os.Stderr, nil)) }

// newRootCommand is the gate's command line: it serves until SIGINT or
// SIGTERM; ready, if set, is called with the listening address once
// requests are accepted.
func newRootCommand(stdout, stderr io.Writer, ready func(addr string)) *cobra.Command {
	s := &gatehost.Settings{}
	cmd := &cobra.Command{
		Use:   "gate --origin URL --hosts HOSTS",
		Short: "The waiting room in front of an origin: a reverse proxy that admits or queues each request",
		Long: `The waiting room in front of an origin: a reverse proxy that decides for each
request, on the room's snapshot and with no round trip to a central service,
whether to pass it to the origin or show the waiting room. Settings come from
flags, defaulting from the environment (GATE_*, and TEMPORAL_* like every
process). The cookie keys come from GATE_COOKIE_KEYS, the file
GATE_COOKIE_KEYS_FILE, or the development key file make run creates; every gate
of a room must hold the same keys. Bad settings exit 2 before anything starts.`,
		Example: `  gate --origin http://127.0.0.1:3000 --hosts shop.example.com --data-center ams
  gate --origin http://origin:3000 --hosts '*' --redis-url redis://redis:6379/0 --strategy counters+borrow --ops-addr 0.0.0.0:8098
  gate --origin http://origin:3000 --hosts shop.example.com --data-center ams --redis-url redis://redis-ams:6379/0 \
    --anywhere-redis-sentinel 'gate:PASSWORD@sentinel-1:26379,sentinel-2:26379,sentinel-3:26379/anywhere'
  gate keygen --file /keys/gate-cookie.keys`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := s.Check(); err != nil {
				return cli.Fail(cli.ExitUsage, "gate: %v", err)
			}
			ctx, stop := cli.ServeContext(cmd.Context())
			defer stop()
			return gatehost.Run(ctx, s, stderr, ready)
		},
	}
	registerFlags(cmd.Flags(), s)
	cmd.AddCommand(newKeygenCommand(stdout))
	return cmd
}

// parseFlags reads the settings from flags, defaulting from the
// environment, and checks them as the command does.
func parseFlags(args []string, stderr io.Writer) (*gatehost.Settings, error) {
	fs := pflag.NewFlagSet("gate", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	s := &gatehost.Settings{}
	registerFlags(fs, s)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return s, nil
}

func registerFlags(fs *pflag.FlagSet, s *gatehost.Settings) {
	s.Temporal.RegisterFlags(fs)
	fs.StringVar(&s.Addr, "addr", config.Env("GATE_ADDR", "127.0.0.1:8088"), "listen address (env GATE_ADDR)")
	fs.StringVar(&s.HealthAddr, "ops-addr", config.Env("GATE_HEALTH_ADDR", ""), "address of /healthz, /status and /metrics; empty: none (env GATE_HEALTH_ADDR)")
	config.Alias(fs, "ops-addr", "health-addr")
	fs.StringVar(&s.Origin, "origin", config.Env("GATE_ORIGIN", ""), "the origin's URL, e.g. http://127.0.0.1:3000 (env GATE_ORIGIN)")
	fs.StringVar(&s.DataCenter, "data-center", config.Env("GATE_DATA_CENTER", "local"), "the data center this gate runs in (env GATE_DATA_CENTER)")
	fs.StringVar(&s.GateID, "gate-id", config.Env("GATE_ID", ""), "this process's id in reports; empty: data center, host, pid and a random suffix (env GATE_ID)")
	fs.StringVar(&s.RedisURL, "redis-url", config.Env("GATE_REDIS_URL", ""), "the data center's Redis, shared by its gates: redis://host:port/db, redis-sentinel://host:26379,host:26379/PRIMARY or redis-cluster://host:port,host:port (rediss… for TLS); empty: counters in this process, for a data center's only gate (env GATE_REDIS_URL)")
	fs.StringVar(&s.AnywhereRedisURL, "anywhere-redis-url", config.Env("GATE_ANYWHERE_REDIS_URL", ""), "the Redis every gate of every data center shares, for the Anywhere pool; empty: --redis-url (env GATE_ANYWHERE_REDIS_URL)")
	fs.StringVar(&s.RedisSentinel, "redis-sentinel", config.Env("GATE_REDIS_SENTINEL", ""), "the data center's Redis by its Sentinels, in place of --redis-url: [user:password@]host:26379,host:26379/PRIMARY[?db=N&sentinel_password=…] (a redis-sentinel:// URL, its scheme optional) (env GATE_REDIS_SENTINEL)")
	fs.StringVar(&s.AnywhereRedisSentinel, "anywhere-redis-sentinel", config.Env("GATE_ANYWHERE_REDIS_SENTINEL", ""), "the Anywhere Redis by its Sentinels, in place of --anywhere-redis-url, as --redis-sentinel (env GATE_ANYWHERE_REDIS_SENTINEL)")
	fs.StringVar(&s.Strategy, "strategy", config.Env("GATE_STRATEGY", gate.StrategyCounters), "how gates on Redis hand out slots: "+gate.StrategyCounters+" (a data center's own share, then Anywhere) or "+gate.StrategyBorrow+" (also other data centers' unused shares, at the pace of the minute; needs one Redis for every data center) (env GATE_STRATEGY)")
	fs.DurationVar(&s.SnapshotEvery, "snapshot-every", config.EnvDuration("GATE_SNAPSHOT_EVERY", 2*time.Second), "how often each room's snapshot is read (env GATE_SNAPSHOT_EVERY)")
	fs.DurationVar(&s.DiscoverEvery, "discover-every", config.EnvDuration("GATE_DISCOVER_EVERY", 3*time.Second), "how often the rooms are listed (env GATE_DISCOVER_EVERY)")
	fs.DurationVar(&s.ReportEvery, "report-every", config.EnvDuration("GATE_REPORT_EVERY", 2*time.Second), "how often counts are reported to each room (env GATE_REPORT_EVERY)")
	fs.DurationVar(&s.ReadTimeout, "read-timeout", config.EnvDuration("GATE_READ_TIMEOUT", time.Minute), "limit on reading a whole request, body included (env GATE_READ_TIMEOUT)")
	fs.DurationVar(&s.WriteTimeout, "write-timeout", config.EnvDuration("GATE_WRITE_TIMEOUT", 5*time.Minute), "limit on answering a request, from the end of its headers (env GATE_WRITE_TIMEOUT)")
	fs.DurationVar(&s.IdleTimeout, "idle-timeout", config.EnvDuration("GATE_IDLE_TIMEOUT", 2*time.Minute), "idle keep-alive connections are closed after (env GATE_IDLE_TIMEOUT)")
	fs.DurationVar(&s.OriginTimeout, "origin-timeout", config.EnvDuration("GATE_ORIGIN_TIMEOUT", gate.DefaultOriginTimeouts.ResponseHeader), "how long the origin may take to start answering (env GATE_ORIGIN_TIMEOUT)")
	fs.Int64Var(&s.MaxBodyBytes, "max-body-bytes", int64(config.EnvInt("GATE_MAX_BODY_BYTES", gate.DefaultMaxBodyBytes)), "largest request body (env GATE_MAX_BODY_BYTES)")
	fs.IntVar(&s.MaxHeaderKiB, "max-header-kib", config.EnvInt("GATE_MAX_HEADER_KIB", 32), "largest request header block, KiB (env GATE_MAX_HEADER_KIB)")
	fs.StringVar(&s.Hosts, "hosts", config.Env("GATE_HOSTS", ""), "comma-separated host names this gate serves: another Host gets 421, none 400; '*' for every Host; required (env GATE_HOSTS)")
	fs.BoolVar(&s.RewriteHost, "rewrite-host", config.EnvBool("GATE_REWRITE_HOST", false), "send the origin its own host name instead of the visitor's (env GATE_REWRITE_HOST)")
	fs.BoolVar(&s.TrustForwarded, "trust-forwarded", config.EnvBool("GATE_TRUST_FORWARDED", false), "believe X-Forwarded-For and X-Forwarded-Proto from the load balancer or TLS terminator in front (env GATE_TRUST_FORWARDED)")
	fs.StringVar(&s.TLSCert, "https-cert", config.Env("GATE_TLS_CERT", ""), "serve HTTPS with this certificate file (PEM; with --https-key) (env GATE_TLS_CERT)")
	fs.StringVar(&s.TLSKey, "https-key", config.Env("GATE_TLS_KEY", ""), "the certificate's private key file (env GATE_TLS_KEY)")
	fs.StringVar(&s.LogLevel, "log-level", config.Env("GATE_LOG_LEVEL", "info"), "debug, info, warn or error (env GATE_LOG_LEVEL)")
}

// newKeygenCommand prints a new cookie key, or with --file creates a key
// file once (kept if it exists), for deployments where every gate mounts it.
func newKeygenCommand(stdout io.Writer) *cobra.Command {
	var id, file string
	cmd := &cobra.Command{
		Use:   "keygen",
		Short: "Print a new cookie key (GATE_COOKIE_KEYS's \"id:base64\"), or create a key file once",
		Example: `  gate keygen
  gate keygen --id gate-2026 --file /keys/gate-cookie.keys`,
		Args: cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := keygen(stdout, id, file); err != nil {
				return cli.Fail(cli.ExitFailed, "gate keygen: %v", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "gate-"+time.Now().UTC().Format("20060102"), "the key's id (it travels in every cookie; letters, digits, '-', '_', '.')")
	cmd.Flags().StringVar(&file, "file", "", "create this key file once (mode 0600), keeping it if it exists")
	return cmd
}

func keygen(stdout io.Writer, id, file string) error {
	if file != "" {
		created, err := keyring.EnsureKeyFile(file, id, "Cookie keys shared by every gate (GATE_COOKIE_KEYS_FILE), created by `gate keygen --file`.")
		if err != nil {
			return err
		}
		verb := "kept"
		if created {
			verb = "created"
		}
		fmt.Fprintf(stdout, "%s %s\n", verb, file)
		return nil
	}
	k, err := keyring.Generate(id)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, k.Encode())
	return nil
}
