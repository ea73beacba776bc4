package publish

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeflow/edgeflow/internal/metrics"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
)

// compressMetrics are the compress pool's own metrics (edgeflow_compress_*).
type compressMetrics struct {
	files    prometheus.Counter
	bytesIn  *prometheus.CounterVec
	bytesOut *prometheus.CounterVec
	ratio    *prometheus.HistogramVec
}

var (
	compressOnce sync.Once
	compressM    *compressMetrics
	publishOnce  sync.Once
	publishM     *publishMetrics
)

// newCompressMetrics registers them once per process, every codec at zero.
func newCompressMetrics() *compressMetrics {
	compressOnce.Do(func() {
		labels := [][]string{{"br"}, {"gzip"}, {"minify"}}
		compressM = &compressMetrics{
			files: metrics.NewCounter(prometheus.CounterOpts{Name: "edgeflow_compress_files_processed_total",
				Help: "Source files the compress pool processed (minified, compressed, hashed, written)."}),
			bytesIn: metrics.NewCounterVec(prometheus.CounterOpts{Name: "edgeflow_compress_input_bytes_total",
				Help: "Bytes given to each codec (br, gzip: the file compressed; minify: the source of a .min twin)."}, []string{"codec"}, labels...),
			bytesOut: metrics.NewCounterVec(prometheus.CounterOpts{Name: "edgeflow_compress_output_bytes_total",
				Help: "Bytes each codec produced."}, []string{"codec"}, labels...),
			ratio: metrics.NewHistogramVec(prometheus.HistogramOpts{Name: "edgeflow_compress_ratio",
				Help:    "Output size over input size, per file and codec (lower is better).",
				Buckets: []float64{.05, .1, .15, .2, .25, .3, .4, .5, .6, .7, .8, .9, 1, 1.1}}, []string{"codec"}, labels...),
		}
	})
	return compressM
}

// file records one source file's outputs.
func (m *compressMetrics) file(source []byte, outs []transform.Output) {
	if m == nil {
		return
	}
	m.files.Inc()
	for _, o := range outs {
		if o.MinifiedFrom != "" {
			m.observe("minify", len(source), len(o.Data))
		}
		if o.Brotli != nil {
			m.observe("br", len(o.Data), len(o.Brotli))
		}
		if o.Gzip != nil {
			m.observe("gzip", len(o.Data), len(o.Gzip))
		}
	}
}

func (m *compressMetrics) observe(codec string, in, out int) {
	m.bytesIn.WithLabelValues(codec).Add(float64(in))
	m.bytesOut.WithLabelValues(codec).Add(float64(out))
	if in > 0 {
		m.ratio.WithLabelValues(codec).Observe(float64(out) / float64(in))
	}
}

// publishMetrics are the publish pool's own metrics (edgeflow_publish_*).
type publishMetrics struct {
	staged    *prometheus.CounterVec
	committed prometheus.Counter
	polls     *prometheus.CounterVec
	lag       *followerLag
}

func newPublishMetrics() *publishMetrics {
	publishOnce.Do(func() {
		publishM = &publishMetrics{
			staged: metrics.NewCounterVec(prometheus.CounterOpts{Name: "edgeflow_publish_files_planned_total",
				Help: "Source files of staged versions, by disposition: reused (an earlier version processed the same content) or new (sent to the compress pool). The reuse rate is reused over all."},
				[]string{"disposition"}, []string{"reused"}, []string{"new"}),
			committed: metrics.NewCounter(prometheus.CounterOpts{Name: "edgeflow_publish_versions_committed_total",
				Help: "Versions committed (listed in their package document, so served)."}),
			polls: metrics.NewCounterVec(prometheus.CounterOpts{Name: "edgeflow_publish_follower_polls_total",
				Help: "Requests the registry follower made to a changes feed, by registry and result (ok, or failed: refused, stalled, malformed)."},
				[]string{"registry", "result"}, []string{"npm", "ok"}, []string{"npm", "failed"}),
			lag: metrics.Register(&followerLag{caughtUp: map[string]time.Time{}, desc: prometheus.NewDesc("edgeflow_publish_follower_lag_seconds",
				"Seconds since the registry follower last saw every change of a registry's feed (now minus the last answer that left nothing behind); exported by the processes that polled the feed, so the lowest value is the follower's.",
				[]string{"registry"}, nil)}),
		}
	})
	return publishM
}

func (m *publishMetrics) planned(toProcess, reused int) {
	if m == nil {
		return
	}
	m.staged.WithLabelValues("reused").Add(float64(reused))
	m.staged.WithLabelValues("new").Add(float64(toProcess))
}

func (m *publishMetrics) commit() {
	if m != nil {
		m.committed.Inc()
	}
}

func (m *publishMetrics) poll(registry string, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "failed"
	}
	m.polls.WithLabelValues(registry, result).Inc()
}

func (m *publishMetrics) caughtUp(registry string, at time.Time) {
	if m != nil {
		m.lag.set(registry, at)
	}
}

// followerLag is the follower's lag, computed when scraped from the last
// moment this process saw the feed caught up; a registry this process never
// polled has no series.
type followerLag struct {
	mu       sync.Mutex
	caughtUp map[string]time.Time
	desc     *prometheus.Desc
}

func (l *followerLag) set(registry string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at.After(l.caughtUp[registry]) {
		l.caughtUp[registry] = at
	}
}

func (l *followerLag) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

func (l *followerLag) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for registry, at := range l.caughtUp {
		ch <- prometheus.MustNewConstMetric(l.desc, prometheus.GaugeValue, max(time.Since(at).Seconds(), 0), registry)
	}
}
