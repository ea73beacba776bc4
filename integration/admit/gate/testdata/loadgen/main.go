// Command loadgen is BenchmarkGateOutOfProcess's load generator, its own
// process so that it shares neither the process nor the client settings of
// what it measures: closed-loop workers on keep-alive connections, for a
// fixed duration, each request timed to its last byte. It prints one JSON
// object: requests, errors, statuses, responses that set a cookie, req/s,
// p50 and p99.
//
//	loadgen -url http://127.0.0.1:8088/ -workers 16 -duration 3s [-cookies FILE]
//
// With -cookies, worker i sends line i mod n of FILE as its Cookie header
// on every request (a browser that keeps the cookie it came with).
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
	PerSecond  float64     `json:"per_second"`
	P50Ms      float64     `json:"p50_ms"`
	P99Ms      float64     `json:"p99_ms"`
	FirstError string      `json:"first_error,omitempty"`
}

func main() {
	target := flag.String("url", "", "the URL every request gets")
	workers := flag.Int("workers", 16, "concurrent closed-loop workers, one keep-alive connection each")
	duration := flag.Duration("duration", 3*time.Second, "how long to send")
	warmup := flag.Duration("warmup", 300*time.Millisecond, "requests sent first and not counted")
	cookies := flag.String("cookies", "", "a file of Cookie header values, one a line, one per worker (round-robin)")
	flag.Parse()
	if *target == "" || *workers <= 0 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "loadgen: -url is required; -workers and -duration must be positive")
		os.Exit(2)
	}
	var jar []string
	if *cookies != "" {
		f, err := os.Open(*cookies)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen: -cookies:", err)
			os.Exit(2)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				jar = append(jar, line)
			}
		}
		f.Close()
		if len(jar) == 0 {
			fmt.Fprintln(os.Stderr, "loadgen: -cookies: no cookie in", *cookies)
			os.Exit(2)
		}
	}
	client := &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        *workers * 2,
		MaxIdleConnsPerHost: *workers * 2,
		DisableCompression:  true,
	}}

	type workerResult struct {
		lat        []time.Duration
		errors     int
		statuses   map[int]int
		setCookies int
		firstErr   string
	}
	results := make([]workerResult, *workers)
	begin := time.Now()
	start, end := begin.Add(*warmup), begin.Add(*warmup+*duration)
	var wg sync.WaitGroup
	for i := range *workers {
		wg.Go(func() {
			res := &results[i]
			res.statuses = map[int]int{}
			res.lat = make([]time.Duration, 0, 1<<14)
			req, err := http.NewRequest(http.MethodGet, *target, nil)
			if err != nil {
				res.firstErr = err.Error()
				res.errors++
				return
			}
			if len(jar) > 0 {
				req.Header.Set("Cookie", jar[i%len(jar)])
			}
			for {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				t1 := time.Now()
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
				if len(resp.Header["Set-Cookie"]) > 0 {
					res.setCookies++
				}
				res.lat = append(res.lat, t1.Sub(t0))
			}
		})
	}
	wg.Wait()
	out := result{Statuses: map[int]int{}}
	var all []time.Duration
	for _, r := range results {
		all = append(all, r.lat...)
		out.Errors += r.errors
		out.SetCookies += r.setCookies
		for s, n := range r.statuses {
			out.Statuses[s] += n
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

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
