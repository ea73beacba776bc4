// Command console serves the HTTP API over rooms at CONSOLE_ADDR
// (http://127.0.0.1:8070; TLS with CONSOLE_TLS_CERT and CONSOLE_TLS_KEY):
// JSON under /api/v1 in Cloudflare's envelope, bearer tokens from
// CONSOLE_TOKENS, CONSOLE_TOKENS_FILE or the development file `make run`
// creates. Its wiring is internal/console; see
// docs/console.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/console"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

func main() { cli.Serve("console", run) }

func run(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fs := flag.NewFlagSet("console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s console.Settings
	s.Temporal.RegisterFlags(fs)
	s.JobStore.RegisterFlags(fs) // Migrate's job store, found as the starter and the workers find it
	// Publish's catalog and metadata bucket under the publish worker's own
	// flag and env names. Its store is the endpoint just registered:
	// config.Storage.RegisterFlags would register -s3-endpoint again.
	fs.StringVar(&s.CatalogDir, "catalog", config.Env("CATALOG_DIR", "catalog"), "Publish's catalog directory (env CATALOG_DIR)")
	fs.StringVar(&s.MetaBucket, "bucket-meta", config.Env("BUCKET_META", metadata.DefaultBuckets.Meta), "Publish's metadata bucket, on the -s3-endpoint store (env BUCKET_META)")
	fs.StringVar(&s.Addr, "addr", config.Env("CONSOLE_ADDR", "127.0.0.1:8070"), "listen address (env CONSOLE_ADDR)")
	fs.StringVar(&s.DataDir, "data-dir", config.Env("DATA_DIR", filepath.Join(".", ".data")), "where the development token file keys/console.tokens is (env DATA_DIR)")
	trust := fs.String("trust-forwarded", config.Env("CONSOLE_TRUST_FORWARDED", ""),
		"comma-separated CIDRs of the proxies whose X-Forwarded-For (the client's address, for the throttle of failed sign-ins) and X-Forwarded-Proto (https: Secure cookies) are believed; empty: none (env CONSOLE_TRUST_FORWARDED)")
	fs.StringVar(&s.MetricsAddr, "metrics-addr", config.Env("CONSOLE_METRICS_ADDR", ""), "address of /metrics (Prometheus), apart from the console's; empty: none (env CONSOLE_METRICS_ADDR)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if s.TrustForwarded, err = console.ParseTrustedProxies(*trust); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return console.Run(ctx, s, stderr, ready)
}
