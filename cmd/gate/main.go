// Command gate is the waiting room in front of an origin: a reverse proxy
// that decides for each request, on the room's snapshot and with no round
// trip to a central service, whether to pass it to the origin or show the
// waiting room. Its logic is internal/admit/gate; this is the process.
//
//	gate --origin http://127.0.0.1:3000 --data-center ams [--redis-url redis://…] [--strategy counters+borrow]
//	gate keygen [--file PATH]     a new cookie key (GATE_COOKIE_KEYS's "id:base64")
//
// Settings come from flags, defaulting from the environment (GATE_*, and
// TEMPORAL_* like every process). The cookie keys come from
// GATE_COOKIE_KEYS, the file GATE_COOKIE_KEYS_FILE, or the development key
// file `make run` creates; every gate of a room must hold the same keys.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/logging"
	"github.com/edgeflow/edgeflow/internal/metrics"
	"github.com/edgeflow/edgeflow/internal/tracing"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "keygen" {
		if err := keygen(os.Args[2:], os.Stdout, os.Stderr); err != nil {
			if !errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(os.Stderr, "gate keygen:", err)
			}
			os.Exit(2)
		}
		return
	}
	cli.Serve("gate", run)
}

// shutdownGrace is how long in-flight requests may finish after a signal.
const shutdownGrace = 15 * time.Second

// startupWait is how long a gate waits for a room whose snapshot cannot be
// read before it takes traffic without it.
const startupWait = 30 * time.Second

type settings struct {
	addr, healthAddr, origin, dataCenter, gateID string
	redisURL, anywhereRedisURL                   string
	strategy                                     string
	snapshotEvery, discoverEvery, reportEvery    time.Duration
	readTimeout, writeTimeout, idleTimeout       time.Duration
	originTimeout                                time.Duration
	maxBody                                      int64
	maxHeaderKiB                                 int
	rewriteHost, trustForwarded                  bool
	logLevel                                     string
	tlsCert, tlsKey                              string
	temporal                                     config.Temporal
}

func parseFlags(args []string, stderr io.Writer) (*settings, error) {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s := &settings{}
	s.temporal.RegisterFlags(fs)
	fs.StringVar(&s.addr, "addr", config.Env("GATE_ADDR", "127.0.0.1:8088"), "listen address (env GATE_ADDR)")
	fs.StringVar(&s.healthAddr, "health-addr", config.Env("GATE_HEALTH_ADDR", ""), "address of /healthz, /status and /metrics; empty: none (env GATE_HEALTH_ADDR)")
	fs.StringVar(&s.origin, "origin", config.Env("GATE_ORIGIN", ""), "the origin's URL, e.g. http://127.0.0.1:3000 (env GATE_ORIGIN)")
	fs.StringVar(&s.dataCenter, "data-center", config.Env("GATE_DATA_CENTER", "local"), "the data center this gate runs in (env GATE_DATA_CENTER)")
	fs.StringVar(&s.gateID, "gate-id", config.Env("GATE_ID", ""), "this process's id in reports; empty: data center, host, pid and a random suffix (env GATE_ID)")
	fs.StringVar(&s.redisURL, "redis-url", config.Env("GATE_REDIS_URL", ""), "the data center's Redis, shared by its gates (redis://host:port/db); empty: counters in this process, for a data center's only gate (env GATE_REDIS_URL)")
	fs.StringVar(&s.anywhereRedisURL, "anywhere-redis-url", config.Env("GATE_ANYWHERE_REDIS_URL", ""), "the Redis every gate of every data center shares, for the Anywhere pool; empty: --redis-url (env GATE_ANYWHERE_REDIS_URL)")
	fs.StringVar(&s.strategy, "strategy", config.Env("GATE_STRATEGY", gate.StrategyCounters), "how gates on Redis hand out slots: "+gate.StrategyCounters+" (a data center's own share, then Anywhere) or "+gate.StrategyBorrow+" (also other data centers' unused shares, at the pace of the minute; needs one Redis for every data center) (env GATE_STRATEGY)")
	fs.DurationVar(&s.snapshotEvery, "snapshot-every", config.EnvDuration("GATE_SNAPSHOT_EVERY", 2*time.Second), "how often each room's snapshot is read (env GATE_SNAPSHOT_EVERY)")
	fs.DurationVar(&s.discoverEvery, "discover-every", config.EnvDuration("GATE_DISCOVER_EVERY", 3*time.Second), "how often the rooms are listed (env GATE_DISCOVER_EVERY)")
	fs.DurationVar(&s.reportEvery, "report-every", config.EnvDuration("GATE_REPORT_EVERY", 2*time.Second), "how often counts are reported to each room (env GATE_REPORT_EVERY)")
	fs.DurationVar(&s.readTimeout, "read-timeout", config.EnvDuration("GATE_READ_TIMEOUT", time.Minute), "limit on reading a whole request, body included (env GATE_READ_TIMEOUT)")
	fs.DurationVar(&s.writeTimeout, "write-timeout", config.EnvDuration("GATE_WRITE_TIMEOUT", 5*time.Minute), "limit on answering a request, from the end of its headers (env GATE_WRITE_TIMEOUT)")
	fs.DurationVar(&s.idleTimeout, "idle-timeout", config.EnvDuration("GATE_IDLE_TIMEOUT", 2*time.Minute), "idle keep-alive connections are closed after (env GATE_IDLE_TIMEOUT)")
	fs.DurationVar(&s.originTimeout, "origin-timeout", config.EnvDuration("GATE_ORIGIN_TIMEOUT", gate.DefaultOriginTimeouts.ResponseHeader), "how long the origin may take to start answering (env GATE_ORIGIN_TIMEOUT)")
	fs.Int64Var(&s.maxBody, "max-body-bytes", int64(config.EnvInt("GATE_MAX_BODY_BYTES", gate.DefaultMaxBodyBytes)), "largest request body (env GATE_MAX_BODY_BYTES)")
	fs.IntVar(&s.maxHeaderKiB, "max-header-kib", config.EnvInt("GATE_MAX_HEADER_KIB", 32), "largest request header block, KiB (env GATE_MAX_HEADER_KIB)")
	fs.BoolVar(&s.rewriteHost, "rewrite-host", config.EnvBool("GATE_REWRITE_HOST", false), "send the origin its own host name instead of the visitor's (env GATE_REWRITE_HOST)")
	fs.BoolVar(&s.trustForwarded, "trust-forwarded", config.EnvBool("GATE_TRUST_FORWARDED", false), "believe X-Forwarded-For and X-Forwarded-Proto from the load balancer or TLS terminator in front (env GATE_TRUST_FORWARDED)")
	fs.StringVar(&s.tlsCert, "https-cert", config.Env("GATE_TLS_CERT", ""), "serve HTTPS with this certificate file (PEM; with --https-key) (env GATE_TLS_CERT)")
	fs.StringVar(&s.tlsKey, "https-key", config.Env("GATE_TLS_KEY", ""), "the certificate's private key file (env GATE_TLS_KEY)")
	fs.StringVar(&s.logLevel, "log-level", config.Env("GATE_LOG_LEVEL", "info"), "debug, info, warn or error (env GATE_LOG_LEVEL)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case s.origin == "":
		return nil, errors.New("--origin (env GATE_ORIGIN) is required: the URL of the site the gate protects")
	case !admit.ValidLabel(s.dataCenter):
		return nil, fmt.Errorf("--data-center %q: 1-64 letters, digits, '.', '_' or '-'", s.dataCenter)
	case s.gateID != "" && !admit.ValidLabel(s.gateID):
		return nil, fmt.Errorf("--gate-id %q: 1-64 letters, digits, '.', '_' or '-'", s.gateID)
	case s.maxBody <= 0 || s.maxHeaderKiB <= 0:
		return nil, errors.New("--max-body-bytes and --max-header-kib must be positive")
	case (s.tlsCert == "") != (s.tlsKey == ""):
		return nil, errors.New("--https-cert and --https-key go together")
	case s.snapshotEvery <= 0 || s.discoverEvery <= 0 || s.reportEvery <= 0:
		return nil, errors.New("--snapshot-every, --discover-every and --report-every must be positive")
	}
	if s.gateID == "" {
		s.gateID = defaultGateID(s.dataCenter)
	}
	if s.anywhereRedisURL == "" {
		s.anywhereRedisURL = s.redisURL
	}
	switch s.strategy {
	case gate.StrategyCounters:
	case gate.StrategyBorrow:
		if s.redisURL == "" || s.anywhereRedisURL != s.redisURL {
			return nil, fmt.Errorf("--strategy %s takes other data centers' unused slots on their own counters: it needs --redis-url, one Redis shared by the gates of every data center, and no other --anywhere-redis-url", s.strategy)
		}
	default:
		return nil, fmt.Errorf("--strategy %q (env GATE_STRATEGY): must be one of %s", s.strategy, strings.Join(gate.Strategies, ", "))
	}
	return s, nil
}

// run serves until ctx is cancelled. ready, if set, is called with the
// listening address once requests are accepted.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	s, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(s.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: %w", s.logLevel, err)
	}
	// The project's handler: text, or JSON with LOG_FORMAT=json, and
	// attributes named like secrets redacted.
	handler, err := logging.Handler(stderr, logging.Options{Level: s.logLevel})
	if err != nil {
		return err
	}
	log := slog.New(handler).With("gate", s.gateID)
	// Tracing (the OTEL_* variables) before Temporal is dialled, so its
	// client carries the interceptor; each request continues its caller's
	// trace and the origin's request joins it.
	shutdownTracing, err := tracing.Setup(ctx, "edgeflow-gate")
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdownTracing(sctx)
	}()

	origin, err := url.Parse(s.origin)
	if err != nil || origin.Host == "" || (origin.Scheme != "http" && origin.Scheme != "https") {
		return fmt.Errorf("--origin: want an http:// or https:// URL with a host")
	}
	keys, err := keyring.GateCookie.Load()
	if err != nil {
		return err
	}
	counters, counterDesc, err := openCounters(s.redisURL, s.anywhereRedisURL, s.strategy, log)
	if err != nil {
		return err
	}
	if counters.Failover != nil {
		go counters.Failover.Run(ctx, 500*time.Millisecond)
	}

	id := admit.Gate{DataCenter: s.dataCenter, ID: s.gateID}
	registry := gate.NewRegistry(id)
	g, err := gate.New(gate.Config{
		Origin: origin, Gate: id, Keys: keys, Counters: counters, Registry: registry, Logger: log,
		Transport:      tracing.Transport(gate.NewTransport(gate.OriginTimeouts{Dial: gate.DefaultOriginTimeouts.Dial, ResponseHeader: s.originTimeout, Idle: gate.DefaultOriginTimeouts.Idle})),
		RewriteHost:    s.rewriteHost,
		MaxBodyBytes:   s.maxBody,
		TrustForwarded: s.trustForwarded,
	})
	if err != nil {
		return err
	}

	var healthSrv *http.Server
	ready503 := make(chan struct{})
	if s.healthAddr != "" {
		healthSrv, err = serveHealth(s.healthAddr, g, ready503, log)
		if err != nil {
			return err
		}
		defer healthSrv.Close()
	}

	tc, err := dialTemporal(ctx, s.temporal, log)
	if err != nil {
		return err
	}
	defer tc.Close()
	rc := roomclient.Client{C: tc}
	watcher := &gate.Watcher{Source: gate.TemporalRooms{Client: rc}, Registry: registry,
		SnapshotEvery: s.snapshotEvery, DiscoverEvery: s.discoverEvery, Logger: log}
	// No traffic before the gate knows the rooms: unknown rooms would let
	// everyone through. A room whose snapshot stays unreadable does not keep
	// the gate (and every other room) down for long: after startupWait the
	// gate starts without it, and reads it as soon as it answers.
	started := time.Now()
	for attempt := 0; ; attempt++ {
		err := watcher.Sync(ctx)
		if err == nil {
			break
		}
		var unread *gate.UnreadRoomsError
		if errors.As(err, &unread) && time.Since(started) > startupWait {
			log.Error("starting without some rooms: their snapshots cannot be read; their traffic passes until they answer", "rooms", strings.Join(unread.Rooms, ","))
			break
		}
		if attempt == 0 {
			log.Warn("waiting for the rooms (Temporal and the admit worker must answer)", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	bg, stopBackground := context.WithCancel(context.Background())
	defer stopBackground()
	go watcher.Run(bg)
	reporter := &gate.Reporter{Registry: registry, Logger: log, Every: s.reportEvery, Store: counters.Shared, Visits: counters.Visits,
		Sink: func(ctx context.Context, r admit.Report) error { return rc.Report(ctx, r, nil) }}
	reporterDone := make(chan struct{})
	go func() { reporter.Run(bg); close(reporterDone) }()
	// Revoked sessions are checked in memory; this writes the gate's own to
	// Redis and reads the other gates' in the background.
	counters.Revocations.Rooms = gate.RevokingRooms(registry)
	// Read the other gates' before taking traffic, so that a gate that
	// starts does not honour sessions revoked elsewhere for its first
	// interval; a Redis that does not answer does not hold the start up.
	pullCtx, cancelPull := context.WithTimeout(ctx, revocationSyncEvery)
	if err := counters.Revocations.Pull(pullCtx); err != nil {
		log.Warn("revoked sessions: could not read the other gates' yet; retrying in the background", "err", err)
	}
	cancelPull()
	revocationsDone := make(chan struct{})
	go func() { counters.Revocations.Run(bg, revocationSyncEvery); close(revocationsDone) }()

	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.addr, err)
	}
	server := &http.Server{
		Handler:           tracing.Handler("gate", g),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.readTimeout,
		WriteTimeout:      s.writeTimeout,
		IdleTimeout:       s.idleTimeout,
		MaxHeaderBytes:    s.maxHeaderKiB << 10,
		ErrorLog:          slog.NewLogLogger(handler, slog.LevelWarn),
	}
	serve := func() error { return server.Serve(ln) }
	if s.tlsCert != "" {
		serve = func() error { return server.ServeTLS(ln, s.tlsCert, s.tlsKey) }
	}
	err = cli.ServeHTTP(ctx, server, serve, shutdownGrace, log, func() {
		close(ready503)
		rooms := []string{}
		for _, r := range registry.Rooms() {
			rooms = append(rooms, r.Name())
		}
		log.Info("gate listening", "addr", ln.Addr().String(), "origin", origin.Redacted(), "data_center", s.dataCenter,
			"counters", counterDesc, "cookie_keys", strings.Join(keys.IDs(), ","), "rooms", strings.Join(rooms, ","))
		if ready != nil {
			ready(ln.Addr().String())
		}
	})
	stopBackground() // the reporter sends its last counts, the revocations their last writes
	<-reporterDone
	<-revocationsDone
	return err
}

// revocationSyncEvery is how often a gate writes the sessions revoked at it
// to Redis and reads the other gates': a revoked session stays revoked at
// every gate within a few seconds while Redis answers.
const revocationSyncEvery = 2 * time.Second

// openCounters connects the Redis servers, if any, and says what the gate
// counts on.
func openCounters(dcURL, anywhereURL, strategy string, log *slog.Logger) (gate.Counters, string, error) {
	connect := func(flagName, raw string) (*gate.RedisCounter, error) {
		if raw == "" {
			return nil, nil
		}
		c, err := gate.NewRedisClient(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
		return &gate.RedisCounter{Client: c}, nil
	}
	dc, err := connect("--redis-url", dcURL)
	if err != nil {
		return gate.Counters{}, "", err
	}
	anywhere := dc
	if anywhereURL != dcURL {
		if anywhere, err = connect("--anywhere-redis-url", anywhereURL); err != nil {
			return gate.Counters{}, "", err
		}
	}
	desc := "in process (even split)"
	switch {
	case dc != nil && anywhere == dc:
		desc = "redis " + redactedHost(dcURL) + " (data center and Anywhere)"
	case dc != nil && anywhere != nil:
		desc = "redis " + redactedHost(dcURL) + " (data center), " + redactedHost(anywhereURL) + " (Anywhere)"
	case anywhere != nil:
		desc = "in process (data center), redis " + redactedHost(anywhereURL) + " (Anywhere)"
	}
	counters, err := gate.NewCounters(dc, anywhere, strategy, log)
	if err != nil {
		return gate.Counters{}, "", fmt.Errorf("--strategy (env GATE_STRATEGY): %w", err)
	}
	if dc != nil || anywhere != nil {
		desc += ", strategy " + counters.Strategy.Name()
	}
	return counters, desc, nil
}

func redactedHost(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return "?"
}

// dialTemporal connects, retrying until Temporal answers or ctx ends.
func dialTemporal(ctx context.Context, t config.Temporal, log *slog.Logger) (client.Client, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for attempt := 0; ; attempt++ {
		c, err := t.Dial(quiet)
		if err == nil {
			return c, nil
		}
		if attempt == 0 {
			log.Warn("waiting for Temporal", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// serveHealth serves /healthz, /status and /metrics; /healthz answers 503 until the
// gate takes traffic.
func serveHealth(addr string, g *gate.Gate, ready <-chan struct{}, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (health): %w", addr, err)
	}
	status := g.StatusHandler()
	// /metrics from the start: the SDK's metrics, the process's and the
	// gate's own (per room, once the room is known).
	gateMetrics.Store(g)
	registerGateMetrics.Do(func() { metrics.Registry.MustRegister(currentGateCollector{}) })
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler())
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-ready:
			status.ServeHTTP(w, r)
		default:
			http.Error(w, "starting: reading the rooms", http.StatusServiceUnavailable)
		}
	}))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		IdleTimeout: time.Minute, MaxHeaderBytes: 8 << 10,
	}
	log.Info("health listening", "health", ln.Addr().String(), "metrics", "http://"+ln.Addr().String()+"/metrics")
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("health server", "err", err)
		}
	}()
	return srv, nil
}

// gateMetrics is the gate whose metrics this process exports (the last one
// run started: tests run several in turn), registered once.
var (
	gateMetrics         atomic.Pointer[gate.Gate]
	registerGateMetrics sync.Once
)

type currentGateCollector struct{}

func (currentGateCollector) Describe(ch chan<- *prometheus.Desc) {
	(&gate.Gate{}).Collector().Describe(ch)
}

func (currentGateCollector) Collect(ch chan<- prometheus.Metric) {
	if g := gateMetrics.Load(); g != nil {
		g.Collector().Collect(ch)
	}
}

// defaultGateID names this process: unique to its lifetime, since the room
// keeps the newest report per gate and a restarted gate starts counting anew.
func defaultGateID(dataCenter string) string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return -1
	}, strings.SplitN(host, ".", 2)[0])
	var b [3]byte
	_, _ = rand.Read(b[:])
	id := fmt.Sprintf("%s-%s-%d-%s", dataCenter, host, os.Getpid(), hex.EncodeToString(b[:]))
	if len(id) > 64 {
		id = id[len(id)-64:]
		id = strings.TrimLeft(id, "-")
	}
	return id
}

// keygen prints a new cookie key, or with --file creates a key file once
// (kept if it exists), for deployments where every gate mounts it.
func keygen(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gate keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	id := fs.String("id", "gate-"+time.Now().UTC().Format("20060102"), "the key's id (it travels in every cookie; letters, digits, '-', '_', '.')")
	file := fs.String("file", "", "create this key file once (mode 0600), keeping it if it exists")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file != "" {
		created, err := keyring.EnsureKeyFile(*file, *id, "Cookie keys shared by every gate (GATE_COOKIE_KEYS_FILE), created by `gate keygen --file`.")
		if err != nil {
			return err
		}
		verb := "kept"
		if created {
			verb = "created"
		}
		fmt.Fprintf(stdout, "%s %s\n", verb, *file)
		return nil
	}
	k, err := keyring.Generate(*id)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, k.Encode())
	return nil
}
