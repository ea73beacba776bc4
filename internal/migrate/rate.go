package migrate

import (
	"fmt"
	"time"
)

// Sample is a reading of a job's totals at a moment.
type Sample struct {
	At      time.Time `json:"at"`
	Objects int64     `json:"objects"`
	Bytes   int64     `json:"bytes"`
}

// RateMeter turns readings into a rate over a sliding window. Until the
// readings span MinSpan it has no rate: two readings a few milliseconds
// apart would give a meaningless, huge first number.
type RateMeter struct {
	Samples []Sample `json:"samples,omitempty"`
	// Window is how far back the rate looks; MinSpan how much time the
	// readings must cover before there is a rate. Zero means the defaults.
	Window  time.Duration `json:"window,omitempty"`
	MinSpan time.Duration `json:"minSpan,omitempty"`
}

// The RateMeter defaults.
const (
	DefaultRateWindow  = time.Minute
	DefaultRateMinSpan = 2 * time.Second
	maxSamples         = 32
)

// Add records a reading. Readings older than the window are dropped, but
// the newest one before the window is kept as its left edge.
func (m *RateMeter) Add(s Sample) {
	if n := len(m.Samples); n > 0 && !s.At.After(m.Samples[n-1].At) {
		m.Samples[n-1].Objects, m.Samples[n-1].Bytes = s.Objects, s.Bytes
		return
	}
	m.Samples = append(m.Samples, s)
	window := m.Window
	if window <= 0 {
		window = DefaultRateWindow
	}
	cut := 0
	for cut+1 < len(m.Samples) && s.At.Sub(m.Samples[cut+1].At) >= window {
		cut++
	}
	if len(m.Samples)-cut > maxSamples {
		cut = len(m.Samples) - maxSamples
	}
	m.Samples = append(m.Samples[:0], m.Samples[cut:]...)
}

// Rate is objects and bytes per second between the oldest and newest
// readings; ok is false until they span MinSpan.
func (m *RateMeter) Rate() (objects, bytes float64, ok bool) {
	if len(m.Samples) < 2 {
		return 0, 0, false
	}
	first, last := m.Samples[0], m.Samples[len(m.Samples)-1]
	span := last.At.Sub(first.At)
	minSpan := m.MinSpan
	if minSpan <= 0 {
		minSpan = DefaultRateMinSpan
	}
	if span < minSpan {
		return 0, 0, false
	}
	sec := span.Seconds()
	return float64(last.Objects-first.Objects) / sec, float64(last.Bytes-first.Bytes) / sec, true
}

// ETA is the time left for remaining objects at rate objects per second;
// ok is false when there is no rate or nothing is known to remain.
func ETA(remaining int64, rate float64) (time.Duration, bool) {
	if rate <= 0 || remaining < 0 {
		return 0, false
	}
	return time.Duration(float64(remaining) / rate * float64(time.Second)).Round(time.Second), true
}

// HumanBytes prints a byte count with a binary unit.
func HumanBytes(n float64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%.0f B", n)
	}
	exp, div := 0, float64(unit)
	for v := n / unit; v >= unit && exp < 5; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", n/div, "KMGTPE"[exp])
}
