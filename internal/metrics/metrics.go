// Package metrics is what every process serves on /metrics for Prometheus:
// the Temporal SDK's metrics (through SDKHandler, the client's metrics
// handler), Go and process metrics, and ours, named edgeflow_*. Each
// process has one registry (Registry); the metrics of a process kind are
// registered when that kind starts, so a process exports only its own, and
// from the start (at zero until used): a restarted process shows up as a new
// instance whose counters began again, which Prometheus's rate() handles.
package metrics

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry is this process's registry.
var Registry = prometheus.NewRegistry()

func init() {
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Handler serves Registry in the Prometheus text (or OpenMetrics) format.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{Registry: Registry, EnableOpenMetrics: true})
}

// register adds c to Registry, or returns the equal collector registered
// before (several workers or servers in one test process share it).
func register[C prometheus.Collector](c C) C {
	if err := Registry.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

// NewCounterVec registers a counter vector and sets every combination of
// the given label values to zero, so it is exported before its first use.
func NewCounterVec(opts prometheus.CounterOpts, labels []string, initial ...[]string) *prometheus.CounterVec {
	v := register(prometheus.NewCounterVec(opts, labels))
	for _, values := range initial {
		v.WithLabelValues(values...)
	}
	return v
}

// Register registers a collector of one's own (a metric computed when
// scraped), or returns the equal one registered before.
func Register[C prometheus.Collector](c C) C { return register(c) }

// NewCounter registers a counter (exported at zero from the start).
func NewCounter(opts prometheus.CounterOpts) prometheus.Counter {
	return register(prometheus.NewCounter(opts))
}

// NewHistogramVec registers a histogram vector, with the given label values
// at zero.
func NewHistogramVec(opts prometheus.HistogramOpts, labels []string, initial ...[]string) *prometheus.HistogramVec {
	v := register(prometheus.NewHistogramVec(opts, labels))
	for _, values := range initial {
		v.WithLabelValues(values...)
	}
	return v
}

// NewGaugeVec registers a gauge vector, with the given label values at zero.
func NewGaugeVec(opts prometheus.GaugeOpts, labels []string, initial ...[]string) *prometheus.GaugeVec {
	v := register(prometheus.NewGaugeVec(opts, labels))
	for _, values := range initial {
		v.WithLabelValues(values...)
	}
	return v
}
