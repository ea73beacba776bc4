// Command cluster is what `make cluster` runs: the system as it runs beyond
// one machine, here on one, in the foreground (Ctrl-C stops it). PostgreSQL
// (a cluster of its own in .data/cluster/pg, run as the postgres user),
// Temporal's frontend, history, matching and worker services as separate
// processes with their schemas set up by Temporal's SQL tool and the
// products' search attributes registered, the Temporal Web UI, MinIO in
// distributed mode (4 nodes behind a balancer), a Redis per data center and
// the Anywhere one behind Redis Sentinel (a primary, a replica, three
// Sentinels), and two processes of every worker pool, two edges and two
// gates per data center, all on free ports. Each process logs to
// .data/cluster/logs/<name>.log; .data/cluster/cluster.env holds the
// addresses for the starters (`set -a; . .data/cluster/cluster.env`).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/devstack"
)

var outMu sync.Mutex

func say(format string, args ...any) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Printf("%s cluster | "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func main() { cli.Execute(newRootCommand()) }

func newRootCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cluster",
		Short: "The system as it runs beyond one machine, here on one, in the foreground: what make cluster runs",
		Long: `The system as it runs beyond one machine, here on one, in the foreground (Ctrl-C
stops it): PostgreSQL, Temporal's services as separate processes, the Web UI,
MinIO in distributed mode, a Redis per data center and the Anywhere one behind
Redis Sentinel (a primary, a replica, three Sentinels), and two
processes of every worker pool, two edges and two gates per data center, on free
ports. Logs go to .data/cluster/logs/<name>.log (CLUSTER_DIR); cluster.env holds
the addresses for the starters. The binaries come from BIN_DIR (./bin).`,
		Example: `  make cluster
  CLUSTER_DIR=/tmp/cluster ./bin/cluster
  set -a; . .data/cluster/cluster.env; set +a; go run ./starters/room list`,
		Args: cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := run(); err != nil {
				say("error: %v", err)
				return cli.Code(cli.ExitFailed)
			}
			return nil
		},
	}
}

func run() error {
	root, err := devstack.RepoRoot()
	if err != nil {
		return err
	}
	dataDir := config.Env("CLUSTER_DIR", filepath.Join(root, ".data", "cluster"))
	logDir := filepath.Join(dataDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	logs, closeLogs := devstack.LogFiles(logDir)
	defer closeLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	c, err := devstack.StartCluster(ctx, devstack.ClusterOptions{
		DataDir: dataDir, BinDir: config.Env("BIN_DIR", filepath.Join(root, "bin")),
		DBPassword: config.Env("TEMPORAL_DB_PASSWORD", "temporal"),
		AccessKey:  config.Env("S3_ACCESS_KEY", "edgeflow"), SecretKey: config.Env("S3_SECRET_KEY", "edgeflow-dev-secret"),
		CatalogDir: config.Env("CATALOG_DIR", filepath.Join(root, "catalog")),
		Say:        say, Logs: logs,
	})
	if err != nil {
		return err
	}
	defer func() {
		say("stopping: the products drain first, then Temporal, MinIO, Redis and PostgreSQL")
		c.Stop()
	}()
	envFile := filepath.Join(dataDir, "cluster.env")
	// Addresses only: the keys stay in the environment they came from.
	env := fmt.Sprintf("TEMPORAL_ADDRESS=%s\nTEMPORAL_UI_URL=%s\nS3_ENDPOINT=%s\nDATA_DIR=%s\n", c.Temporal.HostPort, c.UIURL, c.MinIO.Endpoint, dataDir)
	if err := os.WriteFile(envFile, []byte(env), 0o644); err != nil {
		return err
	}
	say("")
	say("  up in %s: %d processes of ours and Temporal's, logs in %s", time.Since(started).Round(time.Second), len(c.ProcessNames()), logDir)
	say("  Temporal frontend %s   Web UI %s", c.Temporal.HostPort, c.UIURL)
	say("  PostgreSQL        %s   S3 endpoint %s (MinIO nodes behind it)", c.Postgres.Addr, c.MinIO.Endpoint)
	say("  Edges             %s", strings.Join(c.Edges, "  "))
	for _, g := range c.Gates {
		say("  Gate %-12s %s (%s)", g.Name, g.URL, g.DataCenter)
	}
	say("  processes: %s", strings.Join(c.ProcessNames(), " "))
	say("  the addresses for the starters: set -a; . %s; set +a", envFile)
	say("Ctrl-C stops everything")
	select {
	case <-ctx.Done():
		return nil
	case err := <-c.Sup.Failed():
		return err
	case err := <-c.Infra.Failed():
		return err
	case <-c.Postgres.Ended():
		return fmt.Errorf("PostgreSQL is gone: %s", c.Postgres.Died())
	}
}
