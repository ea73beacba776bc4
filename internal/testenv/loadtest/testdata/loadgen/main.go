// Command loadgen is the out-of-process benchmarks' load generator
// (BenchmarkGateOutOfProcess, BenchmarkEdgeOutOfProcess), its own process so
// that it shares neither the process nor the client settings of what it
// measures: closed-loop workers on keep-alive connections, for a fixed
// duration, each request timed to its last byte, the body never decoded.
// It prints one JSON object: requests, errors, statuses, responses that set
// a cookie, bytes of bodies, req/s, p50 and p99, and the requests sent in
// all (the warm-up's too).
//
//	loadgen -url http://127.0.0.1:8088/ -workers 16 -duration 3s [-cookies FILE]
//	loadgen -urls FILE -header 'Accept-Encoding: br' -workers 16 -duration 3s
//
// With -cookies, worker i sends line i mod n of FILE as its Cookie header
// on every request (a browser that keeps the cookie it came with). With
// -urls, worker i starts at line i mod n of FILE and asks for the next line
// with each request. Each -header is sent with every request.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

type result struct {
	Requests   int         `json:"requests"`
	Errors     int         `json:"errors"`
	Statuses   map[int]int `json:"statuses"`
	SetCookies int         `json:"set_cookies"`
	BodyBytes  int64       `json:"body_bytes"`
	// Encodings counts the responses by Content-Encoding ("" for none).
	Encodings  map[string]int `json:"encodings"`
	PerSecond  float64        `json:"per_second"`
	P50Ms      float64        `json:"p50_ms"`
	P99Ms      float64        `json:"p99_ms"`
	FirstError string         `json:"first_error,omitempty"`
	// Sent counts every request answered or failed, the warm-up's too:
	// what the server did work for (its CPU per request).
	Sent int `json:"sent"`
}

func main() {
	target := flag.String("url", "", "the URL every request gets")
	urlsFile := flag.String("urls", "", "a file of URLs, one a line, that each worker asks for in turn (instead of -url)")
	var headers headerFlags
	flag.Var(&headers, "header", "a header sent with every request, 'Name: value' (repeatable)")
	workers := flag.Int("workers", 16, "concurrent closed-loop workers, one keep-alive connection each")
	duration := flag.Duration("duration", 3*time.Second, "how long to send")
	warmup := flag.Duration("warmup", 300*time.Millisecond, "requests sent first and not counted")
	cookies := flag.String("cookies", "", "a file of Cookie header values, one a line, one per worker (round-robin)")
	flag.Parse()
	if (*target == "") == (*urlsFile == "") || *workers <= 0 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "loadgen: one of -url and -urls is required; -workers and -duration must be positive")
		os.Exit(2)
	}
	targets := []string{*target}
	if *urlsFile != "" {
		targets = readLines(*urlsFile, "-urls")
	}
	var jar []string
	if *cookies != "" {
		jar = readLines(*cookies, "-cookies")
	}
	client := &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        *workers * 2,
		MaxIdleConnsPerHost: *workers * 2,
		DisableCompression:  true,
	}}

	type workerResult struct {
		lat        []time.Duration
		bodyBytes  int64
		errors     int
		statuses   map[int]int
		encodings  map[string]int
		setCookies int
		firstErr   string
		sent       int
	}
	results := make([]workerResult, *workers)
	begin := time.Now()
	start, end := begin.Add(*warmup), begin.Add(*warmup+*duration)
	var wg sync.WaitGroup
	for i := range *workers {
		wg.Go(func() {
			res := &results[i]
			res.statuses, res.encodings = map[int]int{}, map[string]int{}
			res.lat = make([]time.Duration, 0, 1<<14)
			reqs := make([]*http.Request, len(targets))
			for j, u := range targets {
				req, err := http.NewRequest(http.MethodGet, u, nil)
				if err != nil {
					res.firstErr = err.Error()
					res.errors++
					return
				}
				for _, h := range headers {
					req.Header.Add(h.name, h.value)
				}
				if len(jar) > 0 {
					req.Header.Set("Cookie", jar[i%len(jar)])
				}
				reqs[j] = req
			}
			next := i
			for {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				req := reqs[next%len(reqs)]
				next++
				resp, err := client.Do(req)
				var n int64
				if err == nil {
					n, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				t1 := time.Now()
				res.sent++
				if t0.Before(start) {
					continue
				}
				if err != nil {
					if res.firstErr == "" {
						res.firstErr = err.Error()
					}
					res.errors++
					continue
				}
				res.statuses[resp.StatusCode]++
				res.bodyBytes += n
				res.encodings[resp.Header.Get("Content-Encoding")]++
				if len(resp.Header["Set-Cookie"]) > 0 {
					res.setCookies++
				}
				res.lat = append(res.lat, t1.Sub(t0))
			}
		})
	}
	wg.Wait()
	out := result{Statuses: map[int]int{}, Encodings: map[string]int{}}
	var all []time.Duration
	for _, r := range results {
		all = append(all, r.lat...)
		out.Errors += r.errors
		out.SetCookies += r.setCookies
		out.Sent += r.sent
		out.BodyBytes += r.bodyBytes
		for s, n := range r.statuses {
			out.Statuses[s] += n
		}
		for e, n := range r.encodings {
			out.Encodings[e] += n
		}
		if out.FirstError == "" {
			out.FirstError = r.firstErr
		}
	}
	out.Requests = len(all)
	if len(all) > 0 {
		slices.Sort(all)
		out.PerSecond = float64(len(all)) / duration.Seconds()
		out.P50Ms = ms(all[len(all)/2])
		out.P99Ms = ms(all[len(all)*99/100])
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// readLines reads the non-empty lines of file (named by flag in errors),
// exiting when there are none.
func readLines(file, flagName string) []string {
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadgen: %s: %v\n", flagName, err)
		os.Exit(2)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		fmt.Fprintf(os.Stderr, "loadgen: %s: no line in %s\n", flagName, file)
		os.Exit(2)
	}
	return lines
}

// headerFlags are the -header flags.
type headerFlags []struct{ name, value string }

func (h *headerFlags) String() string { return fmt.Sprint(*h) }

func (h *headerFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("want 'Name: value', got %q", s)
	}
	*h = append(*h, struct{ name, value string }{strings.TrimSpace(name), strings.TrimSpace(value)})
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
