// Command console serves the console's pages and HTTP API (rooms,
// migrations, publishing) at CONSOLE_ADDR
// (http://127.0.0.1:8070; TLS with CONSOLE_TLS_CERT and CONSOLE_TLS_KEY):
// JSON under /api/v1 in Cloudflare's envelope, bearer tokens from
// CONSOLE_TOKENS, CONSOLE_TOKENS_FILE or the development file `make run`
// creates. Its wiring is internal/console; see
// docs/console.md.
package main

import (
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/console"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

func main() { cli.Execute(newRootCommand(os.Stderr, nil)) }

// newRootCommand is the console's command line; it serves until SIGINT or
// SIGTERM, and ready, if set, gets the listening address.
func newRootCommand(stderr io.Writer, ready func(addr string)) *cobra.Command {
	var s console.Settings
	var trust, liveURL string
	cmd := &cobra.Command{
		Use:   "console",
		Short: "The console: an HTTP API and web pages over the waiting rooms, Migrate's jobs and publishing",
		Long: `The console serves an HTTP API and web pages over the waiting rooms, Migrate's
jobs and publishing: JSON under /api/v1 in Cloudflare's envelope, bearer tokens
from CONSOLE_TOKENS, CONSOLE_TOKENS_FILE or the development file make run
creates; TLS with CONSOLE_TLS_CERT and CONSOLE_TLS_KEY. See docs/console.md.`,
		Example: `  console
  console --addr 0.0.0.0:8070 --ops-addr 0.0.0.0:8071 --trust-forwarded 10.0.0.0/8
  CONSOLE_TOKENS_FILE=/run/secrets/console.tokens console --address temporal:7233`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if s.TrustForwarded, err = console.ParseTrustedProxies(trust); err != nil {
				return cli.Fail(cli.ExitUsage, "console: %v", err)
			}
			if s.Live, err = gate.OpenLiveSource(liveURL); err != nil {
				return cli.Fail(cli.ExitUsage, "console: --admit-redis-url (env ADMIT_REDIS_URL): %v", err)
			}
			ctx, stop := cli.ServeContext(cmd.Context())
			defer stop()
			return console.Run(ctx, s, stderr, ready)
		},
	}
	fs := cmd.Flags()
	s.Temporal.RegisterFlags(fs)
	s.JobStore.RegisterFlags(fs) // Migrate's job store, found as the starter and the workers find it
	// Publish's catalog and metadata bucket under the publish worker's own
	// flag and env names. Its store is the endpoint just registered:
	// config.Storage.RegisterFlags would register --s3-endpoint again.
	fs.StringVar(&s.CatalogDir, "catalog", config.Env("CATALOG_DIR", "catalog"), "Publish's catalog directory (env CATALOG_DIR)")
	fs.StringVar(&s.MetaBucket, "bucket-meta", config.Env("BUCKET_META", metadata.DefaultBuckets.Meta), "Publish's metadata bucket, on the --s3-endpoint store (env BUCKET_META)")
	fs.StringVar(&s.Addr, "addr", config.Env("CONSOLE_ADDR", "127.0.0.1:8070"), "listen address (env CONSOLE_ADDR)")
	fs.StringVar(&s.DataDir, "data-dir", config.Env("DATA_DIR", filepath.Join(".", ".data")), "where the development token file keys/console.tokens is (env DATA_DIR)")
	fs.StringVar(&trust, "trust-forwarded", config.Env("CONSOLE_TRUST_FORWARDED", ""),
		"comma-separated CIDRs of the proxies whose X-Forwarded-For (the client's address, for the throttle of failed sign-ins) and X-Forwarded-Proto (https: Secure cookies) are believed; empty: none (env CONSOLE_TRUST_FORWARDED)")
	fs.StringVar(&s.MetricsAddr, "ops-addr", config.Env("CONSOLE_METRICS_ADDR", ""), "address of /metrics (Prometheus), apart from the console's; empty: none (env CONSOLE_METRICS_ADDR)")
	config.Alias(fs, "ops-addr", "metrics-addr")
	fs.StringVar(&liveURL, "admit-redis-url", config.Env("ADMIT_REDIS_URL", ""),
		"the gates' Anywhere Redis, where each data center writes its rooms' live view (env ADMIT_REDIS_URL); empty: the live view is shown unavailable")
	return cmd
}
