package gate

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

// harness runs a gate on a controlled clock in front of a real origin, with
// the room played by the engine's own Room: the gate's reports go in, and
// the room's snapshots come back, as the room workflow would do.
type harness struct {
	t        *testing.T
	mu       sync.Mutex
	now      time.Time
	room     *admit.Room
	reg      *Registry
	g        *Gate
	keys     *keyring.Keyring
	origin   *httptest.Server
	hits     atomic.Int64 // requests the origin saw
	counters Counters
}

func newHarness(t *testing.T, s admit.Settings, configure ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, now: t0.Add(5 * time.Second)}
	h.origin = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		switch r.URL.Path {
		case "/logout":
			w.Header().Set(RevokeHeader, "revoke")
		case "/broken":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "origin is overloaded\n")
			return
		case "/slow":
			<-r.Context().Done() // answers only after the gate gave up
		case "/upload":
			n, err := io.Copy(io.Discard, r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			_, _ = io.WriteString(w, "got "+itoa(n)+"\n")
			return
		}
		w.Header().Set("Set-Cookie", "origin_session=abc; Path=/")
		w.Header().Set("X-Saw-Forwarded-For", r.Header.Get("X-Forwarded-For"))
		w.Header().Set("X-Saw-Forwarded-Proto", r.Header.Get("X-Forwarded-Proto"))
		w.Header().Set("X-Saw-Uri", r.RequestURI)
		for _, name := range append([]string{"Forwarded"}, clientIPHeaders...) {
			if v := r.Header.Get(name); v != "" {
				w.Header().Set("X-Saw-"+name, v)
			}
		}
		_, _ = io.WriteString(w, "origin:"+r.URL.Path+" host:"+r.Host+"\n")
	}))
	t.Cleanup(h.origin.Close)
	if s.TotalActiveUsers == 0 {
		s.TotalActiveUsers, s.NewUsersPerMinute = 2, 2
	}
	var err error
	if h.room, err = admit.NewRoom(s, 60, t0); err != nil {
		t.Fatal(err)
	}
	gateID := admit.Gate{DataCenter: "ams", ID: "ams-1"}
	h.reg = NewRegistry(gateID)
	page := h.room.Settings.CustomPageHTML
	if err := h.reg.Update(h.room.Snapshot, &page, h.now); err != nil {
		t.Fatal(err)
	}
	h.keys = testRing(t, testKey(t, "k1"))
	h.counters = MemoryCounters()
	originURL, _ := url.Parse(h.origin.URL)
	cfg := Config{Origin: originURL, Gate: gateID, Keys: h.keys, Counters: h.counters, Registry: h.reg,
		Now: h.clock, Logger: quietLogger(), Transport: NewTransport(OriginTimeouts{Dial: time.Second, ResponseHeader: harnessOriginTimeout, Idle: time.Second})}
	for _, c := range configure {
		c(&cfg)
	}
	if h.g, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	h.g.renderClock = func() time.Time { return t0 } // pages render in no time, however loaded the machine
	return h
}

// harnessOriginTimeout is how long the harness's gate waits for the
// origin's headers: long enough for a loaded machine (a test waiting on a
// slow origin sets its own).
const harnessOriginTimeout = 10 * time.Second

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func base64URL(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

// advance moves the clock, hands the room the gate's reports and lets it
// publish, and gives the gate the room's latest snapshot.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.mu.Lock()
	h.now = h.now.Add(d)
	now := h.now
	h.mu.Unlock()
	r := h.reg.Room(h.room.Settings.Name)
	// As the Reporter sends them: the minutes past final, the current one
	// reported even when idle (the room awaits the final reports of every
	// gate it heard from).
	minute := admit.MinuteOf(now, h.room.MinuteLength())
	r.tally.Finish(minute)
	r.tally.Heartbeat(minute)
	for _, rep := range r.tally.Pending() {
		if err := h.room.AddReport(rep, now); err != nil {
			h.t.Fatal(err)
		}
	}
	h.room.Advance(now)
	if err := h.reg.Update(h.room.Snapshot, nil, now); err != nil {
		h.t.Fatal(err)
	}
}

// visitor is a browser's cookie jar for the gate's cookies.
type visitor struct {
	cookies map[string]string
}

func newVisitor() *visitor { return &visitor{cookies: map[string]string{}} }

func (v *visitor) clone() *visitor {
	c := newVisitor()
	for k, val := range v.cookies {
		c.cookies[k] = val
	}
	return c
}

type result struct {
	status int
	header http.Header
	body   string
}

func (r result) fromOrigin() bool { return strings.HasPrefix(r.body, "origin:") }

func (h *harness) get(v *visitor, target string, headers ...string) result {
	h.t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return h.do(v, req)
}

func (h *harness) do(v *visitor, req *http.Request) result {
	h.t.Helper()
	if v != nil {
		for name, val := range v.cookies {
			req.AddCookie(&http.Cookie{Name: name, Value: val})
		}
	}
	rec := httptest.NewRecorder()
	h.g.ServeHTTP(rec, req)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	if v != nil {
		for _, c := range res.Cookies() {
			if !strings.HasPrefix(c.Name, CookieName) {
				continue
			}
			if c.MaxAge < 0 {
				delete(v.cookies, c.Name)
			} else {
				v.cookies[c.Name] = c.Value
			}
		}
	}
	return result{status: res.StatusCode, header: res.Header, body: string(body)}
}

func mustOrigin(t *testing.T, r result, what string) {
	t.Helper()
	if r.status != http.StatusOK || !r.fromOrigin() {
		t.Fatalf("%s: want the origin's page, got %d %q", what, r.status, r.body)
	}
}

func mustQueue(t *testing.T, r result, status int, what string) {
	t.Helper()
	if r.status != status || r.fromOrigin() || !strings.Contains(r.body, "You are in line") {
		t.Fatalf("%s: want the queue page with status %d, got %d %q", what, status, r.status, r.body)
	}
}

func TestAdmitsUpToTheLimitThenQueuesWithTheRoomsStatus(t *testing.T) {
	for _, status := range []int{200, 202, 429} {
		h := newHarness(t, admit.Settings{Name: "shop", QueueingStatusCode: status})
		a, b, c := newVisitor(), newVisitor(), newVisitor()
		mustOrigin(t, h.get(a, "/"), "first visitor")
		mustOrigin(t, h.get(b, "/cart"), "second visitor")
		hits := h.hits.Load()
		res := h.get(c, "/")
		mustQueue(t, res, status, "third visitor, the room full")
		if h.hits.Load() != hits {
			t.Fatal("a queued visitor's request reached the origin")
		}
		if res.header.Get("Refresh") == "" || res.header.Get("Cache-Control") != "no-store" {
			t.Errorf("queue page headers %v: want Refresh and Cache-Control: no-store", res.header)
		}
		if !strings.Contains(res.body, `http-equiv="refresh"`) || !strings.Contains(res.body, `role="status"`) || !strings.Contains(res.body, `lang="en"`) {
			t.Errorf("the default page must refresh itself and announce its status accessibly:\n%s", res.body)
		}
		// Admitted visitors keep passing, without touching a counter.
		for range 3 {
			mustOrigin(t, h.get(a, "/page"), "admitted visitor, again")
		}
		if len(a.cookies) != 1 || len(c.cookies) != 1 {
			t.Errorf("cookies: admitted %v, queued %v", a.cookies, c.cookies)
		}
	}
}

// Cookies that do not open — altered, truncated, another room's, sealed
// with an unknown key, expired — make their bearer a new visitor: with the
// room full, queued, never admitted.
func TestBadCookiesAreNewVisitors(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 1, QueueingStatusCode: 429})
	a := newVisitor()
	mustOrigin(t, h.get(a, "/"), "admitted")
	good := a.cookies[CookieName]
	strangers := Codec{Keys: testRing(t, testKey(t, "stolen"))}
	forged, _ := strangers.Seal(admittedCookie("shop", h.clock()))
	blog := admittedCookie("blog", h.clock())
	blogValue, _ := Codec{Keys: h.keys}.Seal(blog)
	expired := admittedCookie("shop", h.clock().Add(-time.Hour))
	expiredValue, _ := Codec{Keys: h.keys}.Seal(expired)
	raw := []byte(good)
	raw[len(raw)/2] ^= 0x02
	for name, value := range map[string]string{
		"tampered":              string(raw),
		"truncated":             good[:len(good)-3],
		"another room's cookie": blogValue,
		"unknown key":           forged,
		"expired":               expiredValue,
	} {
		v := &visitor{cookies: map[string]string{CookieName: value}}
		mustQueue(t, h.get(v, "/"), 429, name)
	}
	mustOrigin(t, h.get(a, "/"), "the genuine cookie still")
}

// Keeping an old cookie and replaying it buys nothing: a queued visitor
// tries for a slot once per refresh interval whatever copies it holds.
func TestReplayedCookieBuysNoExtraTry(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 1, QueueingMethod: admit.Random,
		SessionDuration: 1, RefreshIntervalSeconds: 10})
	holder := newVisitor()
	mustOrigin(t, h.get(holder, "/"), "the slot's holder")
	q := newVisitor()
	mustQueue(t, h.get(q, "/"), 200, "the queued visitor")
	first := q.clone() // the cookie of its first check-in

	h.advance(15 * time.Second) // past its refresh interval
	mustQueue(t, h.get(q, "/"), 200, "second check-in, still full")
	second := q.clone()
	if first.cookies[CookieName] == second.cookies[CookieName] {
		t.Fatal("a check-in did not renew the cookie")
	}

	// The holder's session ends and a new minute brings a free slot.
	h.advance(60 * time.Second)
	h.advance(50 * time.Second)
	if s := h.reg.Room("shop").Snapshot(); s.SlotsAvailable != 1 {
		t.Fatalf("the next minute should have one slot: %s", s.String())
	}
	// The old cookie, due long ago, is refused its try: the visitor has
	// tried since. It gets a fresh cookie telling it when to come back.
	res := h.get(first, "/")
	mustQueue(t, res, 200, "replaying the first cookie")
	// The newest cookie tries and takes the slot.
	mustOrigin(t, h.get(q, "/"), "the newest cookie, with a free slot")

	// Copies of one cookie: the first use tries, the others do not.
	h2 := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 1, QueueingMethod: admit.Random,
		SessionDuration: 1, RefreshIntervalSeconds: 10})
	mustOrigin(t, h2.get(newVisitor(), "/"), "holder")
	v := newVisitor()
	h2.get(v, "/")
	copies := []*visitor{v.clone(), v.clone(), v.clone()}
	h2.advance(60 * time.Second)
	h2.advance(60 * time.Second) // a free slot, everyone due
	admitted := 0
	for _, c := range copies[:2] {
		if h2.get(c, "/").fromOrigin() {
			admitted++
		}
	}
	if admitted != 1 {
		t.Fatalf("two copies of a cookie got %d slots; want the first copy's try only", admitted)
	}
}

// A queued visitor refreshing before its interval changes nothing: same
// cookie, no try.
func TestEarlyRefreshChangesNothing(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 1})
	h.get(newVisitor(), "/")
	q := newVisitor()
	h.get(q, "/")
	before := q.cookies[CookieName]
	res := h.get(q, "/")
	if res.header.Get("Set-Cookie") != "" || q.cookies[CookieName] != before {
		t.Errorf("an early refresh rewrote the cookie: %v", res.header)
	}
	if r := h.reg.Room("shop").Tally().Pending(); len(r) == 0 || r[len(r)-1].EarlyRefreshes != 1 {
		t.Errorf("the early refresh is not counted: %+v", r)
	}
}

// cookie_attributes auto follows the room's always_use_https, as
// Cloudflare's Waiting Room documentation describes, not the request's
// scheme: behind a TLS-terminating balancer the gate sees HTTP, and an
// IFrame visitor still needs SameSite=None; Secure to keep their place.
func TestCookieFollowsRoomAttributes(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", Path: "/shop/", CookieSuffix: "s1", AlwaysUseHTTPS: true})
	res := h.get(newVisitor(), "/shop/item")
	sc := res.header.Get("Set-Cookie")
	for _, want := range []string{"__edgeflow_waitingroom_s1=", "Path=/shop/", "Secure", "SameSite=None", "HttpOnly", "Max-Age="} {
		if !strings.Contains(sc, want) {
			t.Errorf("always_use_https, plain HTTP at the gate: Set-Cookie %q lacks %q", sc, want)
		}
	}
	h = newHarness(t, admit.Settings{Name: "shop", Path: "/shop/"}, func(c *Config) { c.TrustForwarded = true })
	res = h.get(newVisitor(), "/shop/item", "X-Forwarded-Proto", "https")
	if sc := res.header.Get("Set-Cookie"); !strings.Contains(sc, "SameSite=Lax") || strings.Contains(sc, "Secure") {
		t.Errorf("without always_use_https, auto is Lax whatever the scheme: %q", sc)
	}
	// Paths no room covers go straight to the origin, untouched.
	res = h.get(newVisitor(), "/about")
	mustOrigin(t, res, "a path outside every room")
	if strings.Contains(res.header.Get("Set-Cookie"), CookieName) {
		t.Error("a request outside every room got a waiting room cookie")
	}
}

// Keys rotate without logging anyone out: a cookie of the old key passes
// and comes back sealed with the new one.
func TestKeyRotationKeepsSessions(t *testing.T) {
	old, next := testKey(t, "k-old"), testKey(t, "k-new")
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 1}, func(c *Config) { c.Keys = testRing(t, old) })
	a := newVisitor()
	mustOrigin(t, h.get(a, "/"), "admitted under the old key")
	h.g.codec = Codec{Keys: testRing(t, next, old)} // a restart with the new key listed first
	res := h.get(a, "/")
	mustOrigin(t, res, "the old key's cookie after the rotation")
	raw, _ := base64URL(a.cookies[CookieName])
	if keyIDOf(raw) != "k-new" {
		t.Errorf("the cookie was not resealed with the new key (Set-Cookie %q)", res.header.Get("Set-Cookie"))
	}
	h.g.codec = Codec{Keys: testRing(t, next)} // the old key dropped
	mustOrigin(t, h.get(a, "/"), "after the old key is dropped, the resealed cookie")
}

// An old snapshot admits nobody new, while sessions keep passing.
func TestStaleSnapshotQueuesNewVisitorsOnly(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: 10, SnapshotMaxAgeSeconds: 120})
	a := newVisitor()
	mustOrigin(t, h.get(a, "/"), "admitted")
	h.mu.Lock()
	h.now = h.now.Add(3 * time.Minute) // the room is unreachable: no new snapshot
	h.mu.Unlock()
	mustOrigin(t, h.get(a, "/"), "a session, on a stale snapshot")
	mustQueue(t, h.get(newVisitor(), "/"), 200, "a new visitor, on a stale snapshot")
}

func TestSuspendedRoomPassesUntouched(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 1, Suspended: true})
	for range 3 {
		res := h.get(newVisitor(), "/")
		mustOrigin(t, res, "a suspended room")
		if strings.Contains(res.header.Get("Set-Cookie"), CookieName) {
			t.Fatal("a suspended room set its cookie")
		}
	}
}

func TestStatusEndpoint(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", Path: "/shop/", CookieSuffix: "s"})
	room := h.g.rooms.Room("shop")
	reading := []admit.PoolCount{{Pool: admit.PoolNew, Scope: admit.Anywhere, Count: 4}}
	room.tally.StoreTaken(room.Snapshot().Minute, reading)
	srv := httptest.NewServer(h.g.StatusHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st GateStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Gate.ID != "ams-1" || st.State != StateShared || len(st.Rooms) != 1 || st.Rooms[0].Room != "shop" ||
		st.Rooms[0].CookieName != CookieName+"_s" || st.Rooms[0].Routes[0].Path != "/shop/" || st.Rooms[0].Stale {
		t.Errorf("status %+v", st)
	}
	if c := st.Rooms[0].Counted; len(c) != 1 || !slices.Equal(c[0].StoreTaken, reading) {
		t.Errorf("counted %+v, want the minute with the shared counters' reading %+v", c, reading)
	}
	if resp, err := http.Get(srv.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("healthz: %v %v", resp, err)
	}
}
