//go:build cluster

package cluster

import (
	"encoding/json"
	"fmt"
	"github.com/edgeflow/edgeflow/integration/e2echeck"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/devstack"
)

// load is the admit test's visitors: each arrives new at a gate once; an
// admitted one is let in by a gate of the other data center right after
// (one cookie, every gate).
type load struct {
	target    string
	spikeFrom time.Time
	stopCh    chan struct{}
	wg        sync.WaitGroup
	mu        sync.Mutex
	res       loadResult
}

// admission is one visitor let in: the gate, its request's span and the
// gate's decision time (the ticket's acceptedAt in its cookie).
type admission struct {
	gate, dc     string
	from, to, at time.Time
}

type loadResult struct {
	requests      int64
	letIn         int64 // admitted visitors let in again by another gate
	refused       int64 // ... and refused
	admissions    []admission
	first, last   time.Time
	problems      []string
	refusedDetail []string
}

func newLoad(target string) *load { return &load{target: target, stopCh: make(chan struct{})} }

// arrive sends a new visitor to g and returns it if it was admitted.
func (l *load) arrive(g devstack.Gate) *visitor {
	v := newVisitor()
	from := time.Now()
	in, at, err := v.visit(g, l.target)
	to := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.res.requests++
	if l.res.first.IsZero() {
		l.res.first = from
	}
	l.res.last = to
	switch {
	case err != nil:
		l.problem("a new visitor at %s: %v", g.Name, err)
		return nil
	case !in:
		return nil
	case at.IsZero():
		l.problem("%s admitted a visitor without a cookie saying when", g.Name)
		return nil
	}
	l.res.admissions = append(l.res.admissions, admission{gate: g.Name, dc: g.DataCenter, from: from, to: to, at: at})
	return v
}

// recheck sends an admitted visitor to g, which must let it in.
func (l *load) recheck(v *visitor, g devstack.Gate) {
	in, _, err := v.visit(g, l.target)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.res.requests++
	if err == nil && in {
		l.res.letIn++
		return
	}
	l.res.refused++
	if len(l.res.refusedDetail) < 20 {
		l.res.refusedDetail = append(l.res.refusedDetail, fmt.Sprintf("%s refused a visitor admitted earlier: %v", g.Name, err))
	}
}

// problem notes what no visitor should see; l.mu is held.
func (l *load) problem(format string, args ...any) {
	if len(l.res.problems) < 20 {
		l.res.problems = append(l.res.problems, fmt.Sprintf(format, args...))
	}
}

func (l *load) problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.res.problems...)
}

// start sends a new visitor to every gate every second until stop; each
// admitted one goes on to the gates of the other data center in turn.
func (l *load) start() {
	l.spikeFrom = time.Now()
	for _, g := range cl.Gates {
		var others []devstack.Gate
		for _, o := range cl.Gates {
			if o.DataCenter != g.DataCenter {
				others = append(others, o)
			}
		}
		l.wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-l.stopCh:
					return
				case <-time.After(time.Second):
				}
				if v := l.arrive(g); v != nil {
					l.recheck(v, others[n%len(others)])
				}
			}
		})
	}
}

func (l *load) stop() loadResult {
	close(l.stopCh)
	l.wg.Wait()
	return l.result()
}

func (l *load) result() loadResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.res
	r.admissions = append([]admission(nil), l.res.admissions...)
	r.problems = append(r.problems, r.refusedDetail...)
	return r
}

// admittedSince counts the admissions of requests sent at or after from,
// by the gates of dc ("": any).
func (l *load) admittedSince(from time.Time, dc string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.res.admissions {
		if !a.from.Before(from) && (dc == "" || a.dc == dc) {
			n++
		}
	}
	return n
}

// count is how many visitors dc's gates admitted within [from, to).
func (r loadResult) count(dc string, from, to time.Time) int {
	n := 0
	for _, a := range r.admissions {
		if a.dc == dc && !a.at.Before(from) && a.at.Before(to) {
			n++
		}
	}
	return n
}

// perMinute counts the admissions in their room minutes.
func (r loadResult) perMinute() map[time.Time]int {
	out := map[time.Time]int{}
	for _, a := range r.admissions {
		out[engine.MinuteOf(a.at, admitMinute).UTC()]++
	}
	return out
}

// overLimits checks the visitors' admissions against the limits as the
// chaos suite does: at most new_users_per_minute in a room minute, and at
// every admission at most total_active_users sessions alive with it.
// Sessions are not renewed and run from the gate's decision (the cookie's
// time) for exactly admitSession room minutes (Ticket.SessionValid); a
// place frees as its session ends, not at a minute's end (the gates'
// sub-minute ledger of sessions, docs/admit.md), so the check is at each
// instant. On an overshoot it logs the admissions minute by minute, by
// gate.
func (r loadResult) overLimits(t *testing.T) (over int64) {
	t.Helper()
	per := r.perMinute()
	for m := engine.MinuteOf(r.first, admitMinute); !m.After(engine.MinuteOf(r.last, admitMinute)); m = m.Add(admitMinute) {
		if n := per[m.UTC()]; n > admitRate {
			t.Errorf("minute %s: the visitors saw %d admitted, over new_users_per_minute %d", m.Format("15:04:05"), n, admitRate)
			over += int64(n - admitRate)
		}
	}
	const session = admitSession * admitMinute
	for _, a := range r.admissions {
		if n := r.aliveAt(a.at, session); n > admitTotal {
			t.Errorf("%s (%s): %d sessions alive with the one admitted then, over total_active_users %d", a.at.Format("15:04:05.000"), a.gate, n, admitTotal)
			over++
		}
	}
	if over > 0 {
		byGate := map[time.Time]map[string]int{}
		for _, a := range r.admissions {
			m := engine.MinuteOf(a.at, admitMinute).UTC()
			if byGate[m] == nil {
				byGate[m] = map[string]int{}
			}
			byGate[m][a.gate]++
		}
		for m := engine.MinuteOf(r.first, admitMinute); !m.After(engine.MinuteOf(r.last, admitMinute)); m = m.Add(admitMinute) {
			t.Logf("minute %s: %d admitted %v", m.Format("15:04:05"), per[m.UTC()], byGate[m.UTC()])
		}
	}
	return over
}

// save writes every admission (the gate's decision time, the gate) to
// path, one a line, for a look at an overshoot after the run.
func (r loadResult) save(t *testing.T, path string) {
	var b strings.Builder
	for _, a := range r.admissions {
		fmt.Fprintf(&b, "%s\t%s\n", a.at.UTC().Format(time.RFC3339Nano), a.gate)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Log(err)
	}
}

// aliveAt counts the sessions alive at t: admitted at or before t, less
// than session before it.
func (r loadResult) aliveAt(t time.Time, session time.Duration) int {
	n := 0
	for _, a := range r.admissions {
		if !t.Before(a.at) && t.Before(a.at.Add(session)) {
			n++
		}
	}
	return n
}

// visitor is a browser: it keeps its cookie, which every gate on
// 127.0.0.1 receives (cookie jars ignore ports).
type visitor struct{ c *http.Client }

var visitorTransport = &http.Transport{MaxIdleConnsPerHost: 64}

func newVisitor() *visitor {
	jar, _ := cookiejar.New(nil) // nil options never fail
	return &visitor{c: &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: visitorTransport}}
}

// visit reports whether the gate let the visitor through to the edge (true,
// with the admission's time from a cookie it set) or queued it with the
// room's queueing_status_code (false); any other answer is an error.
func (v *visitor) visit(g devstack.Gate, path string) (bool, time.Time, error) {
	resp, err := v.c.Get(g.URL + path)
	if err != nil {
		return false, time.Time{}, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return false, time.Time{}, nil
	case resp.StatusCode < 500:
		return true, cookies.AcceptedAt(resp), nil // the edge's answer
	default:
		return false, time.Time{}, fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
}

var cookies e2echeck.CookieReader

func gateStatus(g devstack.Gate) (gate.GateStatus, bool) {
	var st gate.GateStatus
	resp, err := http.Get(g.HealthURL + "/status")
	if err != nil {
		return st, false
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st) == nil
}
