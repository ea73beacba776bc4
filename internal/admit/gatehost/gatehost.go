// Package gatehost runs the gate as a process: it wires internal/admit/gate
// to Temporal, Redis, the cookie keys, tracing and the health server, so
// that cmd/gate keeps only its flags.
package gatehost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
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

// shutdownGrace is how long in-flight requests may finish after a signal.
const shutdownGrace = 15 * time.Second

// startupWait is how long a gate waits for a room whose snapshot cannot be
// read before it takes traffic without it.
const startupWait = 30 * time.Second

// Settings are the gate process's settings, named in errors by the flags
// that set them (cmd/gate).
type Settings struct {
	Addr, HealthAddr, Origin, DataCenter, GateID string
	RedisURL, AnywhereRedisURL                   string
	// RedisSentinel and AnywhereRedisSentinel name a Redis by its
	// Sentinels (--redis-sentinel): a redis-sentinel:// URL, its scheme
	// optional. Check turns them into RedisURL and AnywhereRedisURL.
	RedisSentinel, AnywhereRedisSentinel      string
	Strategy                                  string
	SnapshotEvery, DiscoverEvery, ReportEvery time.Duration
	ReadTimeout, WriteTimeout, IdleTimeout    time.Duration
	OriginTimeout                             time.Duration
	MaxBodyBytes                              int64
	MaxHeaderKiB                              int
	RewriteHost, TrustForwarded               bool
	// Hosts is the comma-separated --hosts value; Check parses it.
	Hosts           string
	LogLevel        string
	TLSCert, TLSKey string
	Temporal        config.Temporal

	hosts []string
}

// Check validates the settings, naming the flag at fault, and fills in
// the defaults that depend on others (gate ID, the Anywhere Redis).
func (s *Settings) Check() error {
	switch {
	case s.Origin == "":
		return errors.New("--origin (env GATE_ORIGIN) is required: the URL of the site the gate protects")
	case !admit.ValidLabel(s.DataCenter):
		return fmt.Errorf("--data-center %q: 1-64 letters, digits, '.', '_' or '-'", s.DataCenter)
	case s.GateID != "" && !admit.ValidLabel(s.GateID):
		return fmt.Errorf("--gate-id %q: 1-64 letters, digits, '.', '_' or '-'", s.GateID)
	case s.MaxBodyBytes <= 0 || s.MaxHeaderKiB <= 0:
		return errors.New("--max-body-bytes and --max-header-kib must be positive")
	case (s.TLSCert == "") != (s.TLSKey == ""):
		return errors.New("--https-cert and --https-key go together")
	case s.SnapshotEvery <= 0 || s.DiscoverEvery <= 0 || s.ReportEvery <= 0:
		return errors.New("--snapshot-every, --discover-every and --report-every must be positive")
	}
	// A room that names a host is bypassed by any other Host if the gate
	// takes them all: the operator says which hosts, or that all are meant.
	var err error
	if s.hosts, err = gate.ParseHosts(s.Hosts); err != nil {
		return fmt.Errorf("--hosts (env GATE_HOSTS): %w", err)
	}
	if s.GateID == "" {
		s.GateID = defaultGateID(s.DataCenter)
	}
	for _, r := range []struct {
		url            *string
		sentinel       string
		urlFlag, sFlag string
	}{
		{&s.RedisURL, s.RedisSentinel, "--redis-url (env GATE_REDIS_URL)", "--redis-sentinel (env GATE_REDIS_SENTINEL)"},
		{&s.AnywhereRedisURL, s.AnywhereRedisSentinel, "--anywhere-redis-url (env GATE_ANYWHERE_REDIS_URL)", "--anywhere-redis-sentinel (env GATE_ANYWHERE_REDIS_SENTINEL)"},
	} {
		if r.sentinel != "" {
			if *r.url != "" && *r.url != sentinelURL(r.sentinel) {
				return fmt.Errorf("%s and %s name two Redis deployments for one scope: give one", r.urlFlag, r.sFlag)
			}
			*r.url = sentinelURL(r.sentinel)
		}
		if *r.url != "" {
			if err := gate.CheckRedisURL(*r.url); err != nil {
				return fmt.Errorf("%s: %w", r.urlFlag, err)
			}
		}
	}
	if s.AnywhereRedisURL == "" {
		s.AnywhereRedisURL = s.RedisURL
	}
	switch s.Strategy {
	case gate.StrategyCounters:
	case gate.StrategyBorrow:
		if s.RedisURL == "" || s.AnywhereRedisURL != s.RedisURL {
			return fmt.Errorf("--strategy %s takes other data centers' unused slots on their own counters: it needs --redis-url, one Redis shared by the gates of every data center, and no other --anywhere-redis-url", s.Strategy)
		}
	default:
		return fmt.Errorf("--strategy %q (env GATE_STRATEGY): must be one of %s", s.Strategy, strings.Join(gate.Strategies, ", "))
	}
	return nil
}

// Run serves the gate until ctx is cancelled: it dials Temporal, reads the
// rooms before it takes traffic, and reports counts and revocations in the
// background until it stops. s must have passed Check. Logs go to stderr;
// ready, if set, is called with the listening address once requests are
// accepted.
func Run(ctx context.Context, s *Settings, stderr io.Writer, ready func(addr string)) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s.LogLevel)); err != nil {
		return fmt.Errorf("--log-level %q: %w", s.LogLevel, err)
	}
	// The project's handler: text, or JSON with LOG_FORMAT=json, and
	// attributes named like secrets redacted.
	handler, err := logging.Handler(stderr, logging.Options{Level: s.LogLevel})
	if err != nil {
		return err
	}
	log := slog.New(handler).With("gate", s.GateID)
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

	origin, err := url.Parse(s.Origin)
	if err != nil || origin.Host == "" || (origin.Scheme != "http" && origin.Scheme != "https") {
		return fmt.Errorf("--origin: want an http:// or https:// URL with a host")
	}
	keys, err := keyring.GateCookie.Load()
	if err != nil {
		return err
	}
	counters, counterDesc, err := openCounters(s.RedisURL, s.AnywhereRedisURL, s.Strategy, log)
	if err != nil {
		return err
	}
	if counters.Failover != nil {
		go counters.Failover.Run(ctx, 500*time.Millisecond)
	}
	// What the gates write to Redis for each other is signed with a key
	// derived from their cookie keys, and what they read checked (the
	// revocations' by gate.New).
	signer := gate.NewRedisSigner(keys)

	id := admit.Gate{DataCenter: s.DataCenter, ID: s.GateID}
	registry := gate.NewRegistry(id)
	g, err := gate.New(gate.Config{
		Origin: origin, Gate: id, Keys: keys, Counters: counters, Registry: registry, Logger: log,
		Transport:      tracing.Transport(gate.NewTransport(gate.OriginTimeouts{Dial: gate.DefaultOriginTimeouts.Dial, ResponseHeader: s.OriginTimeout, Idle: gate.DefaultOriginTimeouts.Idle})),
		RewriteHost:    s.RewriteHost,
		MaxBodyBytes:   s.MaxBodyBytes,
		TrustForwarded: s.TrustForwarded,
		Hosts:          s.hosts,
		AnyHost:        s.hosts == nil,
	})
	if err != nil {
		return err
	}

	ready503 := make(chan struct{})
	if s.HealthAddr != "" {
		ops, err := serveHealth(s.HealthAddr, g, ready503, log)
		if err != nil {
			return err
		}
		defer ops.Close()
	}

	tc, err := dialTemporal(ctx, s.Temporal, log)
	if err != nil {
		return err
	}
	defer tc.Close()
	rc := roomclient.Client{C: tc}
	watcher := &gate.Watcher{Source: gate.TemporalRooms{Client: rc}, Registry: registry,
		SnapshotEvery: s.SnapshotEvery, DiscoverEvery: s.DiscoverEvery, Shared: counters.Shared, Logger: log}
	if !waitForRooms(ctx, watcher, log) {
		return nil
	}
	bg, stopBackground := context.WithCancel(context.Background())
	defer stopBackground()
	go watcher.Run(bg)
	reporter := &gate.Reporter{Registry: registry, Logger: log, Every: s.ReportEvery, Store: counters.Shared, Visits: counters.Visits,
		Sink: func(ctx context.Context, r admit.Report) error { return rc.Report(ctx, r, nil) }}
	if counters.DataCenterRedis != nil {
		// The data center's gates report through its Redis: one of them
		// sends the room their sum (docs/admit.md, "Reports").
		reporter.Aggregate = &gate.Aggregator{Client: counters.DataCenterRedis, DataCenter: s.DataCenter,
			Holder: s.GateID + "/" + strconv.FormatInt(time.Now().UnixMicro(), 10), Logger: log,
			Signer: signer, Drops: counters.Drops,
			// The data center's live counts, where room status and the
			// console read them (docs/admit.md, "The live view").
			Live: counters.AnywhereRedis}
	}
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
	sessionsDone := make(chan struct{})
	if counters.Sessions != nil {
		go func() { counters.Sessions.Run(bg); close(sessionsDone) }()
	} else {
		close(sessionsDone)
	}

	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.Addr, err)
	}
	server := &http.Server{
		Handler:           tracing.Handler("gate", g),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.ReadTimeout,
		WriteTimeout:      s.WriteTimeout,
		IdleTimeout:       s.IdleTimeout,
		MaxHeaderBytes:    s.MaxHeaderKiB << 10,
		ErrorLog:          slog.NewLogLogger(handler, slog.LevelWarn),
	}
	serve := func() error { return server.Serve(ln) }
	if s.TLSCert != "" {
		serve = func() error { return server.ServeTLS(ln, s.TLSCert, s.TLSKey) }
	}
	err = cli.ServeHTTP(ctx, server, serve, shutdownGrace, log, func() {
		close(ready503)
		rooms := []string{}
		for _, r := range registry.Rooms() {
			rooms = append(rooms, r.Name())
		}
		log.Info("gate listening", "addr", ln.Addr().String(), "origin", origin.Redacted(), "data_center", s.DataCenter,
			"counters", counterDesc, "cookie_keys", strings.Join(keys.IDs(), ","), "rooms", strings.Join(rooms, ","))
		if ready != nil {
			ready(ln.Addr().String())
		}
	})
	stopBackground() // the reporter sends its last counts, the revocations their last writes
	<-reporterDone
	<-revocationsDone
	<-sessionsDone
	return err
}

// waitForRooms reads the rooms before the gate takes traffic: unknown rooms
// would let everyone through. A room whose snapshot stays unreadable does
// not keep the gate (and every other room) down for long: after
// startupWait the gate starts without it, and reads it as soon as it
// answers. It is false when ctx ends first.
func waitForRooms(ctx context.Context, watcher *gate.Watcher, log *slog.Logger) bool {
	started := time.Now()
	for attempt := 0; ; attempt++ {
		err := watcher.Sync(ctx)
		if err == nil {
			return true
		}
		var unread *gate.UnreadRoomsError
		if errors.As(err, &unread) && time.Since(started) > startupWait {
			log.Error("starting without some rooms: their snapshots cannot be read; their traffic passes until they answer", "rooms", strings.Join(unread.Rooms, ","))
			return true
		}
		if attempt == 0 {
			log.Warn("waiting for the rooms (Temporal and the admit worker must answer)", "err", err)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Second):
		}
	}
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
		desc = "redis " + gate.RedisURLHosts(dcURL) + " (data center and Anywhere)"
	case dc != nil && anywhere != nil:
		desc = "redis " + gate.RedisURLHosts(dcURL) + " (data center), " + gate.RedisURLHosts(anywhereURL) + " (Anywhere)"
	case anywhere != nil:
		desc = "in process (data center), redis " + gate.RedisURLHosts(anywhereURL) + " (Anywhere)"
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

// sentinelURL is a --redis-sentinel value as a URL: the
// redis-sentinel:// scheme is optional there.
func sentinelURL(v string) string {
	if strings.Contains(v, "://") {
		return v
	}
	return gate.SchemeSentinel + "://" + v
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
func serveHealth(addr string, g *gate.Gate, ready <-chan struct{}, log *slog.Logger) (*metrics.Ops, error) {
	status := g.StatusHandler()
	// /metrics from the start: the SDK's metrics, the process's and the
	// gate's own (per room, once the room is known).
	gateMetrics.Store(g)
	registerGateMetrics.Do(func() { metrics.Registry.MustRegister(currentGateCollector{}) })
	ops, err := metrics.ServeOps(addr, map[string]http.Handler{"/": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-ready:
			status.ServeHTTP(w, r)
		default:
			http.Error(w, "starting: reading the rooms", http.StatusServiceUnavailable)
		}
	})}, log)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (health): %w", addr, err)
	}
	log.Info("health listening", "health", ops.Addr, "metrics", ops.MetricsURL())
	return ops, nil
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
