// Command edge is the CDN's HTTP edge: it serves published files, the
// cdnjs-compatible API and the browsable pages from the buckets the publish
// pipeline writes, falling back to the mirror when the primary store fails.
//
// Settings come from flags, defaulting from the environment (EDGE_*, and the
// S3_*, MIRROR_S3_* and BUCKET_* variables every process shares).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/logging"
	"github.com/edgeflow/edgeflow/internal/metrics"
	"github.com/edgeflow/edgeflow/internal/publish/edge"
	"github.com/edgeflow/edgeflow/internal/tracing"
)

func main() { cli.Execute(newRootCommand(os.Stderr, nil)) }

// shutdownGrace is how long in-flight requests may finish after a signal.
const shutdownGrace = 15 * time.Second

// settings are the edge's flags.
type settings struct {
	storage                                                       config.Storage
	addr, opsAddr, publicURL, logLevel                            string
	cacheMiB, maxCachedKiB, inflightMiB                           int
	metaTTL, metaTimeout, primaryTimeout, writeIdle, writeTimeout time.Duration
	onRequest                                                     onRequestSettings
}

// newRootCommand is the edge's command line. It serves until SIGINT or
// SIGTERM, then shuts down gracefully; ready, if set, is called with the
// listening address once requests are accepted.
func newRootCommand(stderr io.Writer, ready func(addr string)) *cobra.Command {
	var s settings
	cmd := &cobra.Command{
		Use:   "edge",
		Short: "The CDN's HTTP edge: published files, the cdnjs API and the browsable pages",
		Long: `The CDN's HTTP edge: it serves published files, the cdnjs-compatible API and the
browsable pages from the buckets Publish writes, falling back to the mirror when
the primary store fails. Settings come from flags, defaulting from the
environment (EDGE_*, and the S3_*, MIRROR_S3_* and BUCKET_* variables every
process shares). It serves until SIGINT or SIGTERM, letting requests in flight
finish.`,
		Example: `  edge
  edge --addr 0.0.0.0:8080 --ops-addr 0.0.0.0:8090 --s3-endpoint minio:9000 --mirror-endpoint mirror:9000
  edge --public-url https://cdn.example.com --cache-mib 1024
  edge --catalog catalog --address temporal:7233 --wait-for-publish 15s   # publish catalog versions on first request`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := cli.ServeContext(cmd.Context())
			defer stop()
			return serve(ctx, s, stderr, ready)
		},
	}
	fs := cmd.Flags()
	s.storage.RegisterFlags(fs)
	fs.StringVar(&s.addr, "addr", config.Env("EDGE_ADDR", "127.0.0.1:8080"), "listen address (env EDGE_ADDR)")
	fs.StringVar(&s.opsAddr, "ops-addr", config.Env("EDGE_METRICS_ADDR", "127.0.0.1:8090"), "address of /metrics (Prometheus) and /healthz, apart from the public one; empty: none (env EDGE_METRICS_ADDR)")
	config.Alias(fs, "ops-addr", "metrics-addr")
	fs.IntVar(&s.cacheMiB, "cache-mib", config.EnvInt("EDGE_CACHE_MIB", 256), "in-memory file cache size in MiB; 0 disables it (env EDGE_CACHE_MIB)")
	fs.IntVar(&s.maxCachedKiB, "max-cached-file-kib", config.EnvInt("EDGE_MAX_CACHED_FILE_KIB", 1024), "largest file kept in the cache, KiB (env EDGE_MAX_CACHED_FILE_KIB)")
	fs.DurationVar(&s.metaTTL, "meta-ttl", config.EnvDuration("EDGE_META_TTL", edge.DefaultMetaTTL), "how long package documents and the search index are cached (env EDGE_META_TTL)")
	fs.DurationVar(&s.metaTimeout, "meta-timeout", config.EnvDuration("EDGE_META_TIMEOUT", edge.DefaultMetaTimeout), "deadline for fetching a metadata document not cached yet (env EDGE_META_TIMEOUT)")
	fs.DurationVar(&s.primaryTimeout, "primary-timeout", config.EnvDuration("EDGE_PRIMARY_TIMEOUT", edge.DefaultPrimaryTimeout), "primary store deadline before the mirror answers (env EDGE_PRIMARY_TIMEOUT)")
	fs.StringVar(&s.publicURL, "public-url", config.Env("EDGE_PUBLIC_URL", ""), "scheme://host for absolute URLs in responses; empty: from each request (env EDGE_PUBLIC_URL)")
	fs.DurationVar(&s.writeIdle, "write-idle", config.EnvDuration("EDGE_WRITE_IDLE", edge.DefaultWriteIdle), "time a client has to accept each 64 KiB of a file (env EDGE_WRITE_IDLE)")
	fs.DurationVar(&s.writeTimeout, "write-timeout", config.EnvDuration("EDGE_WRITE_TIMEOUT", time.Minute), "deadline for writing any other response (env EDGE_WRITE_TIMEOUT)")
	fs.IntVar(&s.inflightMiB, "inflight-mib", config.EnvInt("EDGE_INFLIGHT_MIB", edge.DefaultInflightBytes>>20), "file bodies held in memory for slow clients beyond the cache, MiB (env EDGE_INFLIGHT_MIB)")
	s.onRequest.register(fs)
	fs.StringVar(&s.logLevel, "log-level", config.Env("EDGE_LOG_LEVEL", config.Env("LOG_LEVEL", "info")), "debug, info, warn or error (env EDGE_LOG_LEVEL, LOG_LEVEL)")
	return cmd
}

// serve serves until ctx is cancelled, then shuts down gracefully.
func serve(ctx context.Context, s settings, stderr io.Writer, ready func(addr string)) error {
	if s.cacheMiB < 0 || s.maxCachedKiB <= 0 {
		return cli.Fail(cli.ExitUsage, "edge: --cache-mib must be >= 0 and --max-cached-file-kib > 0 (got %d and %d)", s.cacheMiB, s.maxCachedKiB)
	}
	if err := s.onRequest.check(s.writeTimeout); err != nil {
		return err
	}
	logHandler, err := logging.Handler(stderr, logging.Options{Level: s.logLevel})
	if err != nil {
		return cli.Fail(cli.ExitUsage, "edge: --log-level: %v", err)
	}
	logger := slog.New(logHandler).With("component", "edge")
	shutdownTracing, err := tracing.Setup(ctx, "edgeflow-edge")
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdownTracing(sctx)
	}()

	primary, mirror, err := s.storage.Open()
	if err != nil {
		return err
	}
	onRequest, closeTemporal, err := s.onRequest.build(primary, s.storage.Buckets.Meta, logger)
	if err != nil {
		return err
	}
	defer closeTemporal()
	srv := edge.New(edge.Config{
		OnRequest:      onRequest,
		WaitForPublish: s.onRequest.wait,
		Primary:        primary,
		Mirror:         mirror,
		Buckets:        s.storage.Buckets,
		CacheBytes:     int64(s.cacheMiB) << 20,
		MaxCachedFile:  int64(s.maxCachedKiB) << 10,
		MetaTTL:        s.metaTTL,
		MetaTimeout:    s.metaTimeout,
		PrimaryTimeout: s.primaryTimeout,
		PublicURL:      s.publicURL,
		WriteIdle:      s.writeIdle,
		InflightBytes:  int64(s.inflightMiB) << 20,
		Logger:         logger,
	})
	// Liveness only: the edge keeps serving cached files and metadata while
	// a store is down, so store health must not take it out of rotation.
	srv.Routes().HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, "ok\n")
	})

	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.addr, err)
	}
	metricsURL := "off"
	if s.opsAddr != "" {
		ops, err := metrics.ServeOps(s.opsAddr, map[string]http.Handler{
			"GET /healthz": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }),
		}, logger)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen on %s (metrics): %w", s.opsAddr, err)
		}
		defer ops.Close()
		metricsURL = ops.MetricsURL()
	}
	server := &http.Server{
		// Each request continues its caller's trace (traceparent) while
		// tracing is on; off, the edge itself.
		Handler:           tracing.Handler("edge", srv),
		ReadHeaderTimeout: 10 * time.Second,
		// Files move this deadline forward chunk by chunk (WriteIdle); any
		// other response must be written within it.
		WriteTimeout:   s.writeTimeout,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(logHandler, slog.LevelWarn),
		ConnContext:    edge.ConnContext,
	}
	// Plain requests for files held in memory are answered by the edge's
	// own loop (unless tracing wraps the handler), the rest by net/http;
	// a cached file's headers and body leave in one system call either way.
	fast := srv.FastListener(ln, server)
	serveAll := func() error {
		err := server.Serve(fast)
		fast.Drain(shutdownGrace) // the fast path's answers under way
		return err
	}
	return cli.ServeHTTP(ctx, server, serveAll, shutdownGrace, logger, func() {
		logger.Info("edge listening", "addr", ln.Addr().String(), "primary", s.storage.Primary.String(),
			"mirror", mirror.Config().String(), "buckets", fmt.Sprintf("%+v", s.storage.Buckets), "cache_mib", s.cacheMiB,
			"metrics", metricsURL, "tracing", tracing.Enabled())
		if ready != nil {
			ready(ln.Addr().String())
		}
	})
}
