package migrate

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeflow/edgeflow/internal/metrics"
	"github.com/edgeflow/edgeflow/internal/migrate"
)

// PoolMetrics are the migrate pool's own metrics (edgeflow_migrate_*),
// counted as each page attempt finishes.
type PoolMetrics struct {
	objects     *prometheus.CounterVec
	bytes       prometheus.Counter
	deadLetters prometheus.Counter
	waiting     *prometheus.GaugeVec
}

var (
	metricsOnce sync.Once
	poolMetrics *PoolMetrics
)

// Metrics registers the migrate pool's metrics (once per process, at zero)
// and returns them; the worker passes them to Activities.
func Metrics() *PoolMetrics {
	metricsOnce.Do(func() {
		poolMetrics = &PoolMetrics{
			objects: metrics.NewCounterVec(prometheus.CounterOpts{Name: "edgeflow_migrate_objects_total",
				Help: "Objects that reached an outcome: copied (or would be, in a dry run), skipped (already at the destination), failed."},
				[]string{"outcome"}, []string{"copied"}, []string{"skipped"}, []string{"failed"}),
			bytes: metrics.NewCounter(prometheus.CounterOpts{Name: "edgeflow_migrate_bytes_total",
				Help: "Bytes copied (or that a dry run would copy)."}),
			deadLetters: metrics.NewCounter(prometheus.CounterOpts{Name: "edgeflow_migrate_dead_letters_total",
				Help: "Objects that still failed after their retries and went to their job's dead letters (a redrive retries them)."}),
			waiting: metrics.NewGaugeVec(prometheus.GaugeOpts{Name: "edgeflow_migrate_store_waiting",
				Help: "1 while this worker last found the side's store down (a job waits for it, probing), 0 once a probe or a page passed."},
				[]string{"side"}, []string{migrate.SideSource}, []string{migrate.SideDest}),
		}
	})
	return poolMetrics
}

func (m *PoolMetrics) page(c migrate.Counters) {
	if m == nil {
		return
	}
	m.objects.WithLabelValues("copied").Add(float64(c.Copied))
	m.objects.WithLabelValues("skipped").Add(float64(c.Skipped))
	m.objects.WithLabelValues("failed").Add(float64(c.Failed))
	m.bytes.Add(float64(c.Bytes))
	m.deadLetters.Add(float64(c.Failed))
}

func (m *PoolMetrics) storeWaiting(side string) {
	if m != nil {
		m.waiting.WithLabelValues(side).Set(1)
	}
}

func (m *PoolMetrics) storeUp(sides ...string) {
	if m == nil {
		return
	}
	for _, side := range sides {
		m.waiting.WithLabelValues(side).Set(0)
	}
}
