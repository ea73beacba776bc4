package edge

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeflow/edgeflow/internal/metrics"
)

// edgeMetrics are the edge's own metrics (edgeflow_edge_*), registered by
// the first New of a process, at zero.
type edgeMetrics struct {
	hits, misses prometheus.Counter
	bodies       map[string]prometheus.Counter // by source
}

var (
	edgeMetricsOnce sync.Once
	edgeM           *edgeMetrics
)

func newEdgeMetrics() *edgeMetrics {
	edgeMetricsOnce.Do(func() {
		lookups := metrics.NewCounterVec(prometheus.CounterOpts{Name: "edgeflow_edge_file_cache_lookups_total",
			Help: "Lookups of cacheable file bodies in the in-process cache, by result (hit, miss); the hit rate is hits over all."},
			[]string{"result"}, []string{"hit"}, []string{"miss"})
		bodies := metrics.NewCounterVec(prometheus.CounterOpts{Name: "edgeflow_edge_file_bodies_total",
			Help: "File bodies served, by where they came from: cache, primary or mirror (the fallback)."},
			[]string{"source"}, []string{"cache"}, []string{"primary"}, []string{"mirror"})
		// The children are looked up once: serving a file adds one atomic add.
		edgeM = &edgeMetrics{hits: lookups.WithLabelValues("hit"), misses: lookups.WithLabelValues("miss"),
			bodies: map[string]prometheus.Counter{}}
		for _, src := range []string{"cache", "primary", "mirror"} {
			edgeM.bodies[src] = bodies.WithLabelValues(src)
		}
	})
	return edgeM
}

func (m *edgeMetrics) body(source string) {
	if c, ok := m.bodies[source]; ok {
		c.Inc()
	}
}
