// Package console is the HTTP API over Admit's rooms, Migrate's jobs and
// Publish's libraries: JSON under /api/v1 in Cloudflare's envelope, on the
// same client functions the starters use, and the web pages
// (internal/console/web) outside it. cmd/console is its flags.
package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/console/web"
	"github.com/edgeflow/edgeflow/internal/logging"
	"github.com/edgeflow/edgeflow/internal/metrics"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/hook"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
)

// Options configure a Server.
type Options struct {
	Temporal client.Client
	Tokens   Tokens
	JobStore migrate.JobStoreConfig // where Migrate's jobs keep pages, reports and key lists
	Log      *slog.Logger           // nil: discard
	Timeout  time.Duration          // per Temporal call; 0: 15 s
	// For the web pages' links to the Temporal Web UI (cli.UIURL; empty:
	// no links) and the namespace they are in.
	WebUI     string
	Namespace string

	// Libraries reads Publish's catalog and metadata (its Temporal client,
	// if nil, is Temporal).
	Libraries pubclient.Libraries

	// TrustForwarded are the proxies (--trust-forwarded) whose
	// X-Forwarded-For names the client and whose X-Forwarded-Proto says
	// the browser came over HTTPS; nil: none, the TCP peer is the client.
	TrustForwarded []netip.Prefix
	// Throttle bounds failed bearer tokens and sign-ins per client address.
	Throttle Throttle
	// Endpoints is what migrations started here may reach; nil: read from
	// the environment on each start (tests), as Run reads it once.
	Endpoints *jobclient.EndpointPolicy
	// HookSecret verifies GitHub's webhook deliveries at POST
	// /hooks/github (PUBLISH_WEBHOOK_SECRET); nil: the hook refuses them.
	HookSecret []byte
	// Live reads the rooms' live views (the gates' Anywhere Redis,
	// ADMIT_REDIS_URL); nil: they are shown unavailable.
	Live *roomclient.LiveSource
}

// New builds the API's routes.
func New(o Options) *Server {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Timeout == 0 {
		o.Timeout = 15 * time.Second
	}
	if o.Libraries.Temporal == nil {
		o.Libraries.Temporal = o.Temporal
	}
	s := &Server{tokens: o.Tokens, log: o.Log, mux: http.NewServeMux(),
		rooms:      roomAPI{rc: roomclient.Client{C: o.Temporal, LiveSource: o.Live}, timeout: o.Timeout, log: o.Log},
		migrations: migrationAPI{tc: o.Temporal, jobStore: o.JobStore, timeout: o.Timeout, endpoints: o.Endpoints, log: o.Log},
		publish:    publishAPI{tc: o.Temporal, libs: o.Libraries, timeout: o.Timeout}}
	for _, rt := range s.routes() {
		s.mux.Handle(rt.pattern, s.api(rt.handler))
	}
	// Anything else under /api/v1 answers in the envelope too (after
	// authentication, so the API's shape is not probed for free).
	s.mux.Handle("/api/v1/", s.api(func(http.ResponseWriter, *http.Request) (int, any, *ResultInfo, error) {
		return 0, nil, nil, fail(http.StatusNotFound, CodeNotFound, "path: no such route (GET /api/v1/openapi.json lists them)")
	}))
	// GitHub's deliveries carry their own proof (an HMAC of the body), not
	// a token: the hook is outside /api/v1 and the pages.
	s.mux.Handle("/hooks/github", s.githubHook(o))
	s.mux.Handle("/", s.pages(o))
	s.front = &front{trusted: o.TrustForwarded, limiter: newFailureLimiter(o.Throttle), metrics: newThrottleMetrics(), next: s.mux}
	return s
}

// pages are the console's web pages (internal/console/web) at everything
// outside /api/v1: they sign in with the same tokens, into a session cookie
// that /api/v1 never reads.
func (s *Server) pages(o Options) http.Handler {
	return web.New(web.Options{
		Authenticate: func(secret string) (string, bool, bool) {
			t, ok := s.tokens.Authenticate("Bearer " + secret)
			return t.Name, t.ReadOnly, ok
		},
		Rooms: roomclient.Client{C: o.Temporal, LiveSource: o.Live}, Namespace: o.Namespace, WebUI: o.WebUI, Log: o.Log, Timeout: o.Timeout,
		Migrations: web.Migrations{Temporal: o.Temporal, JobStore: o.JobStore, Start: s.migrations.startForm},
		Libraries:  o.Libraries,
	}).Handler()
}

// githubHook starts a library's check when its repository's release or tag
// is delivered (internal/publish/hook).
func (s *Server) githubHook(o Options) http.Handler {
	return &hook.GitHub{
		Secret: o.HookSecret,
		Log:    o.Log,
		Catalog: func() ([]catalog.Package, error) {
			if o.Libraries.CatalogDir == "" {
				return nil, errors.New("no catalog directory configured (CATALOG_DIR)")
			}
			return catalog.Load(o.Libraries.CatalogDir)
		},
		Start: func(ctx context.Context, name, delivery string) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, o.Timeout)
			defer cancel()
			opts, workflowType, input := pubclient.HookCheck(name, delivery)
			run, err := o.Temporal.ExecuteWorkflow(ctx, opts, workflowType, input)
			var started *serviceerror.WorkflowExecutionAlreadyStarted
			if errors.As(err, &started) {
				return opts.ID, nil // a redelivery: its check ran already
			}
			if err != nil {
				return "", err
			}
			return run.GetID(), nil
		},
	}
}

// Settings are cmd/console's.
type Settings struct {
	Addr     string
	DataDir  string
	Temporal config.Temporal
	JobStore migrate.JobStoreConfig // the migrate workers' S3_* and BUCKET_MIGRATE

	// Publish's catalog (the publish workers' CATALOG_DIR) and metadata
	// bucket (BUCKET_META), read on the job store's S3 endpoint: both
	// products' workers find their store by the same S3_* variables.
	CatalogDir, MetaBucket string

	TrustForwarded []netip.Prefix // --trust-forwarded: Options.TrustForwarded
	MetricsAddr    string         // /metrics apart from the console's port; empty: none
	// Live reads the rooms' live views: cmd/console opens it on the gates'
	// Anywhere Redis (--admit-redis-url, ADMIT_REDIS_URL) as a gate
	// connects (gate.OpenLiveSource); nil: none.
	Live *roomclient.LiveSource
}

// Run serves the API until ctx ends; ready, if set, gets the address.
func Run(ctx context.Context, st Settings, stderr io.Writer, ready func(addr string)) error {
	log := logging.New("console", stderr)
	tokens, from, err := LoadTokens(os.Getenv, st.DataDir)
	if err != nil {
		return err
	}
	// A malformed allowlist stops the console here, naming the variable,
	// rather than refusing every migration started later.
	endpoints, err := jobclient.PolicyFromEnv(os.Getenv, st.JobStore.S3.Endpoint)
	if err != nil {
		return err
	}
	tc, err := st.Temporal.Dial(log)
	if err != nil {
		return err
	}
	defer tc.Close()
	meta, err := s3.New(st.JobStore.S3)
	if err != nil {
		return fmt.Errorf("S3_ENDPOINT: %w", err)
	}
	libs := pubclient.Libraries{Store: meta, Meta: st.MetaBucket, CatalogDir: st.CatalogDir}
	hookSecret, hookFrom, err := hook.SecretFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	tlsConf, err := TLSFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: New(Options{Temporal: tc, Tokens: tokens, JobStore: st.JobStore, Endpoints: endpoints, Log: log, WebUI: cli.UIURL(), Namespace: st.Temporal.Namespace,
			Libraries: libs, TrustForwarded: st.TrustForwarded, HookSecret: hookSecret, Live: st.Live}).Handler(),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute,
	}
	ln, err := Listen(st.Addr, tlsConf)
	if err != nil {
		return fmt.Errorf("CONSOLE_ADDR: %w", err)
	}
	if st.MetricsAddr != "" {
		ops, err := metrics.ServeOps(st.MetricsAddr, nil, log)
		if err != nil {
			ln.Close()
			return fmt.Errorf("CONSOLE_METRICS_ADDR: %w", err)
		}
		defer ops.Close()
		log.Info("serving metrics", "url", ops.MetricsURL())
	}
	addr, scheme := ln.Addr().String(), "http"
	if tlsConf != nil {
		scheme = "https"
	}
	return cli.ServeHTTP(ctx, srv, func() error { return srv.Serve(ln) }, 30*time.Second, log, func() {
		log.Info("serving the API and the console", "url", scheme+"://"+addr+"/api/v1/", "console", scheme+"://"+addr+"/",
			"callers", len(tokens), "callers_from", from, "trusted_proxies", len(st.TrustForwarded),
			"github_hook", scheme+"://"+addr+"/hooks/github", "github_hook_secret_from", cmp.Or(hookFrom, "none: deliveries refused"))
		if ready != nil {
			ready(addr)
		}
	})
}
