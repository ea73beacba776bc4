package migrate

import (
	"testing"
	"time"
)

func TestRateMeter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var m RateMeter
	if _, _, ok := m.Rate(); ok {
		t.Fatal("rate with no readings")
	}
	m.Add(Sample{At: t0})
	// 1,000 objects 5 ms later would be 200,000/s: no rate yet.
	m.Add(Sample{At: t0.Add(5 * time.Millisecond), Objects: 1000, Bytes: 1 << 20})
	if r, _, ok := m.Rate(); ok {
		t.Fatalf("first rate reading after 5ms: %.0f/s", r)
	}
	m.Add(Sample{At: t0.Add(4 * time.Second), Objects: 2000, Bytes: 4 << 20})
	objs, bytes, ok := m.Rate()
	if !ok || objs != 500 || bytes != float64(1<<20) {
		t.Fatalf("rate %v %v %v, want 500/s and 1 MiB/s", objs, bytes, ok)
	}
	// Old readings leave the window; the rate follows the recent pace.
	for i := 1; i <= 30; i++ {
		m.Add(Sample{At: t0.Add(4*time.Second + time.Duration(i)*10*time.Second), Objects: 2000 + int64(i)*100})
	}
	if objs, _, _ := m.Rate(); objs < 9.9 || objs > 10.1 {
		t.Fatalf("recent rate %v, want 10/s", objs)
	}
	if len(m.Samples) > 8 {
		t.Fatalf("%d samples kept for a 1-minute window of 10s readings", len(m.Samples))
	}
}

func TestETA(t *testing.T) {
	if d, ok := ETA(1000, 100); !ok || d != 10*time.Second {
		t.Fatalf("ETA %v %v", d, ok)
	}
	if _, ok := ETA(10, 0); ok {
		t.Fatal("ETA with no rate")
	}
	if got := HumanBytes(1536); got != "1.5 KiB" {
		t.Fatalf("HumanBytes %q", got)
	}
	if got := HumanBytes(3 << 30); got != "3.0 GiB" {
		t.Fatalf("HumanBytes %q", got)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "64MiB": 64 << 20, "5G": 5 << 30, "1.5KiB": 1536, "16 mb": 16 << 20, "0": 0, "10B": 10} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MiB", "-1", "ten"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}
