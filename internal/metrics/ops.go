package metrics

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Ops is a process's ops endpoint, apart from the port it serves users on:
// GET /metrics (Registry) and the process's own routes (/healthz,
// /status …). The worker host, the edge and the gate each serve one, built
// here so that their limits and /metrics are the same.
type Ops struct {
	// Addr is the address bound: the port chosen when asked for host:0.
	Addr string
	srv  *http.Server
}

// ServeOps listens on addr and serves GET /metrics and routes (a
// http.ServeMux pattern → its handler) until Close. The listen error is
// returned as net.Listen gives it, for the caller to name its flag. A
// failure to serve later is logged to log, if set.
func ServeOps(addr string, routes map[string]http.Handler, log *slog.Logger) (*Ops, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", Handler())
	for pattern, h := range routes {
		mux.Handle(pattern, h)
	}
	// Small requests from scrapers and probes only; a scrape of a busy
	// process's metrics still fits in the write timeout.
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
		IdleTimeout: time.Minute, MaxHeaderBytes: 8 << 10,
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && log != nil {
			log.Error("ops endpoint", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return &Ops{Addr: ln.Addr().String(), srv: srv}, nil
}

// MetricsURL is where the endpoint serves /metrics.
func (o *Ops) MetricsURL() string { return "http://" + o.Addr + "/metrics" }

// Close stops serving at once: probes and scrapes need no draining.
func (o *Ops) Close() error { return o.srv.Close() }
