// Command edge is the CDN's HTTP edge: it serves published files, the
// cdnjs-compatible API and the browsable pages from the buckets the publish
// pipeline writes, falling back to the mirror when the primary store fails.
//
// Settings come from flags, defaulting from the environment (EDGE_*, and the
// S3_*, MIRROR_S3_* and BUCKET_* variables every process shares).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/logging"
	"github.com/edgeflow/edgeflow/internal/metrics"
	"github.com/edgeflow/edgeflow/internal/publish/edge"
	"github.com/edgeflow/edgeflow/internal/tracing"
)

func main() {
	cli.Serve("edge", run)
}

// shutdownGrace is how long in-flight requests may finish after a signal.
const shutdownGrace = 15 * time.Second

// run serves until ctx is cancelled, then shuts down gracefully. ready, if
// set, is called with the listening address once requests are accepted.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fs := flag.NewFlagSet("edge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var storage config.Storage
	storage.RegisterFlags(fs)
	addr := fs.String("addr", config.Env("EDGE_ADDR", "127.0.0.1:8080"), "listen address (env EDGE_ADDR)")
	metricsAddr := fs.String("metrics-addr", config.Env("EDGE_METRICS_ADDR", "127.0.0.1:8090"), "address of /metrics (Prometheus) and /healthz, apart from the public one; empty: none (env EDGE_METRICS_ADDR)")
	cacheMiB := fs.Int("cache-mib", config.EnvInt("EDGE_CACHE_MIB", 256), "in-memory file cache size in MiB; 0 disables it (env EDGE_CACHE_MIB)")
	maxCachedKiB := fs.Int("max-cached-file-kib", config.EnvInt("EDGE_MAX_CACHED_FILE_KIB", 1024), "largest file kept in the cache, KiB (env EDGE_MAX_CACHED_FILE_KIB)")
	metaTTL := fs.Duration("meta-ttl", config.EnvDuration("EDGE_META_TTL", edge.DefaultMetaTTL), "how long package documents and the search index are cached (env EDGE_META_TTL)")
	metaTimeout := fs.Duration("meta-timeout", config.EnvDuration("EDGE_META_TIMEOUT", edge.DefaultMetaTimeout), "deadline for fetching a metadata document not cached yet (env EDGE_META_TIMEOUT)")
	primaryTimeout := fs.Duration("primary-timeout", config.EnvDuration("EDGE_PRIMARY_TIMEOUT", edge.DefaultPrimaryTimeout), "primary store deadline before the mirror answers (env EDGE_PRIMARY_TIMEOUT)")
	publicURL := fs.String("public-url", config.Env("EDGE_PUBLIC_URL", ""), "scheme://host for absolute URLs in responses; empty: from each request (env EDGE_PUBLIC_URL)")
	writeIdle := fs.Duration("write-idle", config.EnvDuration("EDGE_WRITE_IDLE", edge.DefaultWriteIdle), "time a client has to accept each 64 KiB of a file (env EDGE_WRITE_IDLE)")
	writeTimeout := fs.Duration("write-timeout", config.EnvDuration("EDGE_WRITE_TIMEOUT", time.Minute), "deadline for writing any other response (env EDGE_WRITE_TIMEOUT)")
	inflightMiB := fs.Int("inflight-mib", config.EnvInt("EDGE_INFLIGHT_MIB", edge.DefaultInflightBytes>>20), "file bodies held in memory for slow clients beyond the cache, MiB (env EDGE_INFLIGHT_MIB)")
	logLevel := fs.String("log-level", config.Env("EDGE_LOG_LEVEL", config.Env("LOG_LEVEL", "info")), "debug, info, warn or error (env EDGE_LOG_LEVEL, LOG_LEVEL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *cacheMiB < 0 || *maxCachedKiB <= 0 {
		return fmt.Errorf("-cache-mib must be >= 0 and -max-cached-file-kib > 0 (got %d and %d)", *cacheMiB, *maxCachedKiB)
	}
	logHandler, err := logging.Handler(stderr, logging.Options{Level: *logLevel})
	if err != nil {
		return fmt.Errorf("-log-level: %w", err)
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

	primary, mirror, err := storage.Open()
	if err != nil {
		return err
	}
	srv := edge.New(edge.Config{
		Primary:        primary,
		Mirror:         mirror,
		Buckets:        storage.Buckets,
		CacheBytes:     int64(*cacheMiB) << 20,
		MaxCachedFile:  int64(*maxCachedKiB) << 10,
		MetaTTL:        *metaTTL,
		MetaTimeout:    *metaTimeout,
		PrimaryTimeout: *primaryTimeout,
		PublicURL:      *publicURL,
		WriteIdle:      *writeIdle,
		InflightBytes:  int64(*inflightMiB) << 20,
		Logger:         logger,
	})
	// Liveness only: the edge keeps serving cached files and metadata while
	// a store is down, so store health must not take it out of rotation.
	srv.Routes().HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, "ok\n")
	})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	metricsURL := "off"
	if *metricsAddr != "" {
		ops, err := metrics.ServeOps(*metricsAddr, map[string]http.Handler{
			"GET /healthz": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }),
		}, logger)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen on %s (metrics): %w", *metricsAddr, err)
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
		WriteTimeout:   *writeTimeout,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(logHandler, slog.LevelWarn),
	}
	return cli.ServeHTTP(ctx, server, func() error { return server.Serve(ln) }, shutdownGrace, logger, func() {
		logger.Info("edge listening", "addr", ln.Addr().String(), "primary", storage.Primary.String(),
			"mirror", mirror.Config().String(), "buckets", fmt.Sprintf("%+v", storage.Buckets), "cache_mib", *cacheMiB,
			"metrics", metricsURL, "tracing", tracing.Enabled())
		if ready != nil {
			ready(ln.Addr().String())
		}
	})
}
