package onrequest

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	promutil "github.com/edgeflow/edgeflow/internal/metrics"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
)

// requestMetrics are the edge's counts of requests for versions not published
// and of the listings they cost, registered once per process at zero.
type requestMetrics struct {
	answers  *prometheus.CounterVec
	listings *prometheus.CounterVec
}

var (
	metricsOnce sync.Once
	metricsM    *requestMetrics
)

func newMetrics() *requestMetrics {
	metricsOnce.Do(func() {
		var kinds [][]string
		for k := NotApplicable; k <= NotReady; k++ {
			kinds = append(kinds, []string{k.String()})
		}
		metricsM = &requestMetrics{
			answers: promutil.NewCounterVec(prometheus.CounterOpts{Name: "edgeflow_edge_on_request_answers_total",
				Help: "Requests for a version not published, by answer: published (within the wait), refused (404), not-ready (503), not-applicable (not a catalog library)."},
				[]string{"answer"}, kinds...),
			listings: promutil.NewCounterVec(prometheus.CounterOpts{Name: "edgeflow_edge_on_request_listings_total",
				Help: "Version listings the edge asked a package's source for, by result (ok, not-found, error)."},
				[]string{"result"}, []string{"ok"}, []string{"not-found"}, []string{"error"}),
		}
	})
	return metricsM
}

func (m *requestMetrics) answer(a Answer) { m.answers.WithLabelValues(a.Kind.String()).Inc() }

func (m *requestMetrics) listing(err error) {
	switch {
	case err == nil:
		m.listings.WithLabelValues("ok").Inc()
	case errors.Is(err, registry.ErrNotFound):
		m.listings.WithLabelValues("not-found").Inc()
	default:
		m.listings.WithLabelValues("error").Inc()
	}
}
