// Package loadtest is the harness of the out-of-process benchmarks
// (BenchmarkGateOutOfProcess, BenchmarkEdgeOutOfProcess): what they measure
// runs as its own process, against nginx (Debian's, one worker, a config of
// its own on free ports), driven by one load generator process
// (testdata/loadgen: closed-loop workers on keep-alive connections, each
// request timed to its last byte) in alternating rounds.
package loadtest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/testenv"
)

// BuildLoadgen builds the load generator into dir and returns its path.
func BuildLoadgen(dir string) (string, error) {
	return testenv.BuildCommand(dir, "./internal/testenv/loadtest/testdata/loadgen")
}

// Load is one round of the load generator.
type Load struct {
	// URLs are asked for in turn by each worker (worker i starts at i).
	URLs []string
	// Headers ("Name: value") go with every request.
	Headers []string
	// Cookies, if set, are the workers' Cookie headers (worker i sends
	// Cookies[i mod n]).
	Cookies  []string
	Workers  int
	Duration time.Duration
	// Warmup is sent first and not counted.
	Warmup time.Duration
}

// Result is what the load generator measured in one round.
type Result struct {
	Requests   int            `json:"requests"`
	Errors     int            `json:"errors"`
	Statuses   map[int]int    `json:"statuses"`
	SetCookies int            `json:"set_cookies"`
	BodyBytes  int64          `json:"body_bytes"`
	Encodings  map[string]int `json:"encodings"` // by Content-Encoding, "" for none
	PerSecond  float64        `json:"per_second"`
	P50Ms      float64        `json:"p50_ms"`
	P99Ms      float64        `json:"p99_ms"`
	FirstError string         `json:"first_error"`
	// Sent is every request of the round, the warm-up's and failed ones
	// too: what the server worked for.
	Sent int `json:"sent"`
	// CPUPerRequest is the server's CPU time over the round divided by
	// Sent, when the benchmark measured it (RunMeasured).
	CPUPerRequest time.Duration `json:"-"`
}

// Run runs one round with the load generator at bin; dir holds its input
// files (name distinguishes them).
func Run(bin, dir, name string, l Load) (Result, error) {
	args := []string{"-workers", fmt.Sprint(l.Workers), "-duration", l.Duration.String(), "-warmup", l.Warmup.String()}
	if len(l.URLs) == 1 {
		args = append(args, "-url", l.URLs[0])
	} else {
		file := filepath.Join(dir, name+".urls")
		if err := os.WriteFile(file, []byte(strings.Join(l.URLs, "\n")), 0o600); err != nil {
			return Result{}, err
		}
		args = append(args, "-urls", file)
	}
	for _, h := range l.Headers {
		args = append(args, "-header", h)
	}
	if len(l.Cookies) > 0 {
		file := filepath.Join(dir, name+".cookies")
		if err := os.WriteFile(file, []byte(strings.Join(l.Cookies, "\n")), 0o600); err != nil {
			return Result{}, err
		}
		args = append(args, "-cookies", file)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return Result{}, fmt.Errorf("loadgen %s: %w", name, err)
	}
	var r Result
	if err := json.Unmarshal(out, &r); err != nil {
		return Result{}, fmt.Errorf("loadgen %s: %w: %s", name, err, out)
	}
	return r, nil
}

// RunMeasured is Run, also measuring the CPU time the server's processes
// (pids) use over the round: Result.CPUPerRequest.
func RunMeasured(bin, dir, name string, l Load, pids []int) (Result, error) {
	before, err := ProcessesCPU(pids)
	if err != nil {
		return Result{}, err
	}
	r, err := Run(bin, dir, name, l)
	if err != nil {
		return r, err
	}
	after, err := ProcessesCPU(pids)
	if err != nil {
		return r, err
	}
	if r.Sent > 0 {
		r.CPUPerRequest = (after - before) / time.Duration(r.Sent)
	}
	return r, nil
}

// PerSecond, P99 and CPUMicros pick a number out of a Result.
func PerSecond(r Result) float64 { return r.PerSecond }
func P99(r Result) float64       { return r.P99Ms }
func CPUMicros(r Result) float64 { return float64(r.CPUPerRequest) / float64(time.Microsecond) }

// Values are f of each result.
func Values(rs []Result, f func(Result) float64) []float64 {
	var v []float64
	for _, r := range rs {
		v = append(v, f(r))
	}
	return v
}

// Median is the median of f over rs (the upper one of an even count).
func Median(rs []Result, f func(Result) float64) float64 {
	v := Values(rs, f)
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}
