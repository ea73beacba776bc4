package gate

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// One admitted visitor replaying the cookie it was admitted with, 300
// times over three minute boundaries, is one session in the room: the
// status API's estimated_total_active_users says 1 once the minute of the
// admission has left the session window (each replay used to count a
// session of its own there).
func TestReplayedCookieCountsOneSession(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: 3})
	a := newVisitor()
	mustOrigin(t, h.get(a, "/"), "admitted") // t0+5s
	admitted := a.clone()
	h.advance(56 * time.Second) // t0+1m+1s
	for m := range 3 {
		for i := range 100 {
			mustOrigin(t, h.get(admitted.clone(), "/"), "replay "+strconv.Itoa(m*100+i))
		}
		h.advance(time.Minute)
	}
	h.advance(30 * time.Second) // the snapshot of t0+4m
	snap := h.room.Snapshot
	if !snap.Minute.Equal(t0.Add(4 * time.Minute)) {
		t.Fatalf("snapshot of %s, want t0+4m", snap.Minute)
	}
	if got := snap.StatusAPI().EstimatedTotalActiveUsers; got != 1 {
		t.Fatalf("estimated_total_active_users = %d after 300 replays of one cookie, want 1 (%s)", got, snap.String())
	}
	if snap.SlotsAvailable != 9 {
		t.Errorf("slots available %d, want 9", snap.SlotsAvailable)
	}
}

// A browser firing 6 requests at once just after a minute boundary, all
// with the cookie of the minute before, moves its session once.
func TestParallelRequestsAtAMinuteBoundaryCountOnce(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10})
	a := newVisitor()
	mustOrigin(t, h.get(a, "/"), "admitted") // t0+5s
	h.advance(55 * time.Second)              // t0+1m exactly
	var wg sync.WaitGroup
	for range 6 {
		c := a.clone()
		wg.Go(func() {
			if r := h.get(c, "/"); !r.fromOrigin() {
				t.Errorf("a parallel request got %d", r.status)
			}
		})
	}
	wg.Wait()
	rep, ok := h.reg.Room("shop").Tally().Report(t0.Add(time.Minute))
	if !ok {
		t.Fatal("no report of the minute")
	}
	if rep.Seen != 1 || len(rep.Renewed) != 1 || rep.Renewed[0].Count != 1 || !rep.Renewed[0].Minute.Equal(t0) {
		t.Fatalf("6 parallel requests of one browser: seen %d, renewed %+v; want the session moved once from t0", rep.Seen, rep.Renewed)
	}
}

// Two gates of a room sharing a Redis (the Anywhere store) that both see
// one visitor in a minute count it once in the room: the gate that settles
// it first on the store counts it, in the background of its reports.
func TestTwoGatesCountAVisitorOnce(t *testing.T) {
	testenv.Require(t, env)
	rc := redisCounter(t, env.Redis.URL)
	// The store's keys expire with their minutes: a clock ahead of now.
	t0 := admit.MinuteOf(time.Now(), time.Minute).Add(10 * time.Minute)
	room, err := admit.NewRoom(admit.Settings{Name: "shop" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10),
		TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: 1}, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := t0.Add(5 * time.Second)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	keys := testRing(t, testKey(t, "k1"))
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("origin:")) }))
	t.Cleanup(origin.Close)
	originURL, _ := url.Parse(origin.URL)
	type gateUnderTest struct {
		g   *Gate
		reg *Registry
		rep *Reporter
	}
	var gates []gateUnderTest
	for _, id := range []string{"ams-1", "ams-2"} {
		gid := admit.Gate{DataCenter: "ams", ID: id}
		reg := NewRegistry(gid)
		if err := reg.Update(room.Snapshot, nil, clock()); err != nil {
			t.Fatal(err)
		}
		counters := mustCounters(t, nil, &rc, "")
		g, err := New(Config{Origin: originURL, Gate: gid, Keys: keys, Counters: counters, Registry: reg, Now: clock, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		rep := &Reporter{Registry: reg, Logger: quietLogger(), Now: clock, Visits: counters.Visits,
			Sink: func(_ context.Context, r admit.Report) error { return room.AddReport(r, clock()) }}
		gates = append(gates, gateUnderTest{g, reg, rep})
	}
	get := func(g *Gate, cookie string) (string, int) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: CookieName, Value: cookie})
		}
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		for _, c := range rec.Result().Cookies() {
			if c.Name == CookieName {
				return c.Value, rec.Code
			}
		}
		return cookie, rec.Code
	}
	advance := func(d time.Duration) {
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
		for _, x := range gates {
			x.rep.Tick(context.Background())
		}
		room.Advance(clock())
		for _, x := range gates {
			if err := x.reg.Update(room.Snapshot, nil, clock()); err != nil {
				t.Fatal(err)
			}
		}
	}

	admittedCookie, code := get(gates[0].g, "")
	if code != http.StatusOK {
		t.Fatalf("the first visitor got %d", code)
	}
	advance(56 * time.Second) // t0+1m+1s
	// The visitor's old cookie at both gates (twice at the second), then
	// at the first again: each request moves its session at most once.
	get(gates[0].g, admittedCookie)
	get(gates[1].g, admittedCookie)
	get(gates[1].g, admittedCookie)
	get(gates[0].g, admittedCookie)
	advance(3 * time.Second)
	seen, renewed := 0, 0
	for _, rep := range room.Ledger.Open {
		if rep.Minute.Equal(t0.Add(time.Minute)) {
			seen += rep.Seen
			for _, c := range rep.Renewed {
				renewed += c.Count
			}
		}
	}
	if seen != 1 || renewed != 1 {
		t.Fatalf("two gates seeing one visitor in a minute: seen %d, renewed %d in the room; want 1 each", seen, renewed)
	}
	advance(time.Minute)
	advance(20 * time.Second) // the snapshot of t0+2m: only the session moved into t0+1m
	if got := room.Snapshot.ActiveUsers; got != 1 || !room.Snapshot.Minute.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("active users %d in the snapshot of %s, want 1 of t0+2m", got, room.Snapshot.Minute)
	}
}

// memoryVisits is a VisitStore in memory, as Redis would settle it, or
// failing.
type memoryVisits struct {
	mu   sync.Mutex
	last map[string]time.Time
	err  error
}

func (m *memoryVisits) FirstVisits(_ context.Context, room string, seen []admit.Sighting, _ time.Duration) (first, unsettled []admit.Sighting, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, seen, m.err
	}
	for _, s := range seen {
		k := room + "/" + s.Visitor
		last := m.last[k]
		if !last.Before(s.Minute) {
			continue
		}
		m.last[k] = s.Minute
		if !s.From.IsZero() && last.After(s.From) {
			s.From = last
		}
		first = append(first, s)
	}
	return first, nil, nil
}

// A gate on a shared store counts the visitors it saw in a minute in its
// final report of that minute, once the store says it saw them first; a
// visitor another gate settled first is not counted; while the store
// fails, the gate counts what it saw itself (nothing is lost).
func TestReporterSettlesVisitsBeforeTheFinalReport(t *testing.T) {
	store := &memoryVisits{last: map[string]time.Time{}}
	reg := registryWith(t, admit.Settings{Name: "shop"})
	room := reg.Room("shop")
	m1 := t0.Add(time.Minute)
	now := m1.Add(10 * time.Second)
	var got []admit.Report
	p := &Reporter{Registry: reg, Logger: quietLogger(), Now: func() time.Time { return now }, Visits: store,
		Sink: func(_ context.Context, r admit.Report) error { got = append(got, r); return nil }}
	// Another gate settled "b" in this minute already.
	if f, _, _ := store.FirstVisits(context.Background(), "shop", []admit.Sighting{{Visitor: "b", Minute: m1, From: t0}}, time.Hour); len(f) != 1 {
		t.Fatal("the other gate's sighting")
	}
	for _, v := range []string{"a", "b", "a"} {
		_, minute := room.tally.Begin(p.Now, time.Minute)
		room.tally.End(minute, room.visits.Effect(admit.Effect{Minute: m1, Seen: true, Renewed: t0}, v, 7*time.Minute, true))
	}
	now = t0.Add(2*time.Minute + 100*time.Millisecond)
	p.Tick(context.Background())
	var final *admit.Report
	for i := range got {
		if got[i].Minute.Equal(m1) && got[i].Final {
			final = &got[i]
		}
	}
	if final == nil || final.Seen != 1 || len(final.Renewed) != 1 || final.Renewed[0] != (admit.MinuteCount{Minute: t0, Count: 1}) {
		t.Fatalf("final report of the minute: %+v, want visitor a alone, moved from t0", final)
	}

	// The store fails: the gate counts its own sightings.
	store.err = errors.New("redis down")
	m2 := t0.Add(2 * time.Minute)
	room.tally.Add(room.visits.Effect(admit.Effect{Minute: m2, Seen: true, Renewed: m1}, "c", 7*time.Minute, true))
	now = t0.Add(3*time.Minute + 100*time.Millisecond)
	p.Tick(context.Background())
	if r, ok := room.tally.Report(m2); !ok || r.Seen != 1 || !r.Final || room.visits.Unconfirmed() != 1 {
		t.Fatalf("with the store down: %+v, unsettled %d; want c counted here", r, room.visits.Unconfirmed())
	}
}

// Copies of one queued visitor's cookie checking in in a new minute count
// one visitor waiting, not one per copy.
func TestCopiesOfAQueuedCookieCountOneWaiting(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 1, RefreshIntervalSeconds: 10})
	mustOrigin(t, h.get(newVisitor(), "/"), "the slot's holder")
	q := newVisitor()
	mustQueue(t, h.get(q, "/"), 200, "queued")
	h.advance(2 * time.Second)
	mustQueue(t, h.get(q, "/"), 200, "back, counted")
	h.advance(time.Minute) // every copy is due, in the next minute
	for i := range 5 {
		mustQueue(t, h.get(q.clone(), "/"), 200, "copy "+strconv.Itoa(i))
	}
	rep, ok := h.reg.Room("shop").Tally().Report(admit.MinuteOf(h.clock(), time.Minute))
	if !ok {
		t.Fatal("no report of the minute")
	}
	waiting := 0
	for _, c := range rep.Queued {
		waiting += c.Count
	}
	if waiting != 1 {
		t.Fatalf("5 copies of one queued cookie: %d waiting in the minute's report (%+v), want 1", waiting, rep.Queued)
	}
}

// In a random room that queues, a request without a cookie gets a queued
// cookie (marked as not back yet) and no try: a client dropping its cookie
// never takes the slot a waiting visitor checks in for.
func TestCookielessRequestsGetNoTryInARandomQueue(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 1, QueueingMethod: admit.Random, RefreshIntervalSeconds: 10})
	mustOrigin(t, h.get(newVisitor(), "/"), "the minute's one new visitor")
	q := newVisitor()
	mustQueue(t, h.get(q, "/"), 200, "queued")
	h.advance(13 * time.Second)
	mustQueue(t, h.get(q, "/"), 200, "back, counted")
	h.advance(50 * time.Second) // the next minute: one slot, the room queueing
	if s := h.room.Snapshot; s.Status != admit.StatusQueueing || s.SlotsAvailable != 1 {
		t.Fatalf("snapshot %s", s)
	}
	for i := range 20 {
		d := newVisitor()
		mustQueue(t, h.get(d, "/"), 200, "cookieless request "+strconv.Itoa(i))
		ck, _, err := h.g.codec.Open(d.cookies[CookieName], "shop", h.clock())
		if err != nil || !ck.Fresh || ck.Admitted() {
			t.Fatalf("the cookieless request's cookie: %+v, %v; want a fresh queued one", ck, err)
		}
	}
	h.advance(10 * time.Second)
	mustOrigin(t, h.get(q, "/"), "the waiting visitor, checking in for the minute's slot")
}
