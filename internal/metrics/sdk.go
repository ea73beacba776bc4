package metrics

import (
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

// SDKHandler is the Temporal client's metrics handler, exporting the SDK's
// metrics (task latencies, slots, poll results, requests…) and the ones
// workflows emit through workflow.GetMetricsHandler into Registry, named
// after Prometheus's conventions: counters end in _total, timers become
// histograms in seconds ending in _seconds, gauges keep their name. The SDK
// tags one metric with different tag sets at different places; each metric
// is exported with the union of its tags, an absent one empty (which
// Prometheus reads as absent).
func SDKHandler() client.MetricsHandler { return sdkHandler{c: sdk} }

var sdk = register(&sdkCollector{families: map[string]*family{}})

// LatencyBuckets are the histogram buckets of SDK timers, in seconds.
var LatencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

type kind int

const (
	counterKind kind = iota
	gaugeKind
	timerKind
)

type sdkHandler struct {
	c    *sdkCollector
	tags map[string]string
}

func (h sdkHandler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	maps.Copy(merged, h.tags)
	for k, v := range tags {
		merged[labelName(k)] = v
	}
	return sdkHandler{c: h.c, tags: merged}
}

func (h sdkHandler) Counter(name string) client.MetricsCounter {
	s := h.c.series(promName(name, counterKind), counterKind, h.tags)
	return counterFunc(func(d int64) { s.add(float64(d)) })
}

func (h sdkHandler) Gauge(name string) client.MetricsGauge {
	s := h.c.series(promName(name, gaugeKind), gaugeKind, h.tags)
	return gaugeFunc(s.set)
}

func (h sdkHandler) Timer(name string) client.MetricsTimer {
	s := h.c.series(promName(name, timerKind), timerKind, h.tags)
	return timerFunc(func(d time.Duration) { s.observe(d.Seconds()) })
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }

func promName(name string, k kind) string {
	name = sanitize(name)
	switch k {
	case counterKind:
		if !strings.HasSuffix(name, "_total") {
			name += "_total"
		}
	case timerKind:
		if !strings.HasSuffix(name, "_seconds") {
			name += "_seconds"
		}
	}
	return name
}

func labelName(k string) string { return sanitize(k) }

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

type sdkCollector struct {
	mu       sync.RWMutex
	families map[string]*family
}

type family struct {
	kind   kind
	labels map[string]bool // the union of every series' label names
	series map[string]*series
}

type series struct {
	labels map[string]string
	bits   atomic.Uint64 // counter or gauge value (float64 bits)
	mu     sync.Mutex    // histogram
	counts []uint64
	count  uint64
	sum    float64
}

func (s *series) add(d float64) {
	for {
		old := s.bits.Load()
		if s.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

func (s *series) set(v float64) { s.bits.Store(math.Float64bits(v)) }

func (s *series) observe(v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = make([]uint64, len(LatencyBuckets))
	}
	for i, b := range LatencyBuckets {
		if v <= b {
			s.counts[i]++
		}
	}
	s.count++
	s.sum += v
}

func seriesKey(tags map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(tags[k])
		b.WriteByte(0)
	}
	return b.String()
}

func (c *sdkCollector) series(name string, k kind, tags map[string]string) *series {
	key := seriesKey(tags)
	c.mu.RLock()
	if f := c.families[name]; f != nil {
		if s := f.series[key]; s != nil {
			c.mu.RUnlock()
			return s
		}
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.families[name]
	if f == nil {
		f = &family{kind: k, labels: map[string]bool{}, series: map[string]*series{}}
		c.families[name] = f
	}
	s := f.series[key]
	if s == nil {
		s = &series{labels: maps.Clone(tags)}
		f.series[key] = s
		for l := range tags {
			f.labels[l] = true
		}
	}
	return s
}

// Describe sends nothing: the SDK's metrics are known only as they appear
// (an unchecked collector).
func (c *sdkCollector) Describe(chan<- *prometheus.Desc) {}

func (c *sdkCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for name, f := range c.families {
		labels := slices.Sorted(maps.Keys(f.labels))
		desc := prometheus.NewDesc(name, "Temporal SDK metric "+name+" (see the SDK's metrics reference), or one a workflow emits.", labels, nil)
		for _, s := range f.series {
			values := make([]string, len(labels))
			for i, l := range labels {
				values[i] = s.labels[l]
			}
			switch f.kind {
			case counterKind:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, math.Float64frombits(s.bits.Load()), values...)
			case gaugeKind:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, math.Float64frombits(s.bits.Load()), values...)
			case timerKind:
				s.mu.Lock()
				buckets := make(map[float64]uint64, len(LatencyBuckets))
				for i, b := range LatencyBuckets {
					if s.counts != nil {
						buckets[b] = s.counts[i]
					} else {
						buckets[b] = 0
					}
				}
				count, sum := s.count, s.sum
				s.mu.Unlock()
				ch <- prometheus.MustNewConstHistogram(desc, count, sum, buckets, values...)
			}
		}
	}
}
