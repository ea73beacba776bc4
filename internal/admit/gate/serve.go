package gate

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// visit is one request's way through ServeHTTP's steps: each step reads
// what the ones before it found and adds its own. It stays on the
// request's stack.
type visit struct {
	// beginVisit: the room, its state, and the minute the decision is
	// counted in, open until counted.
	room    *Room
	st      *roomState
	now     time.Time
	minute  time.Time
	counted bool

	// judge: who the visitor is.
	ck           *Cookie // its cookie of this room (nil: none, or its session revoked)
	sent         string  // that cookie's value as sent
	resealNeeded bool    // it opened with a key being rotated out
	visitor      string
	tries        int64         // attempts the cookie records
	expected     int64         // what they will be after this try (0: a new visitor)
	guard        *attemptGuard // a queued visitor's one slot per try (nil: not queued)

	// decide and count: the engine's decision, its effect as counted.
	d     admit.Decision
	moved admit.Effect // the session's move, recorded once the cookie is known

	// seal: the cookie the visitor holds after this request.
	next  *Cookie
	attrs cookieAttributes
}

// ServeHTTP decides one request: screen it, judge who the visitor is,
// decide and count on the room's snapshot, seal the visitor's cookie, and
// respond: the origin's answer or the waiting room.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	room := g.screen(w, r)
	if room == nil {
		return
	}
	v := g.beginVisit(room)
	defer v.endUncounted()
	g.judge(r, &v)
	g.decide(r, &v)
	g.count(&v)
	if v.d.Outcome != admit.Bypass {
		g.seal(w, &v)
	}
	g.respond(w, r, &v)
}

// screen answers what the gate refuses (a body over the limit, a host it
// does not serve, a path it cannot make canonical) and sends what no room
// judges straight to the origin. Otherwise it bounds the body, gives the
// request its canonical path and returns the room that judges it; nil: the
// request is answered.
func (g *Gate) screen(w http.ResponseWriter, r *http.Request) *Room {
	if r.ContentLength > g.maxBody {
		plain(w, http.StatusRequestEntityTooLarge, "The request body is too large.")
		return nil
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, g.maxBody)
	}
	switch g.hostStatus(r.Host) {
	case http.StatusBadRequest:
		plain(w, http.StatusBadRequest, "The request names no host.")
		return nil
	case http.StatusMisdirectedRequest:
		plain(w, http.StatusMisdirectedRequest, "This site is not served here.")
		return nil
	}
	// The origin gets exactly the path the gate judges, whatever the
	// origin makes of dot-segments, doubled slashes or escapes.
	canonical, err := admit.CanonicalPath(requestPath(r.URL))
	if err != nil {
		msg := "The request's path is not valid."
		if errors.Is(err, admit.ErrEncodedSlash) {
			msg = "The request's path holds an encoded slash or a backslash, which this site does not accept."
		}
		plain(w, http.StatusBadRequest, msg)
		return nil
	}
	setPath(r.URL, canonical)
	room := g.rooms.Match(r.Host, r.URL.Path)
	if room == nil || isPreflight(r) {
		// No room covers it, or a browser asks whether it may send a
		// cross-origin request: preflights carry no cookie, so judging one
		// would count a new visitor (and spend a slot) for nothing.
		g.proxy.ServeHTTP(w, r)
		return nil
	}
	return room
}

// beginVisit opens the decision's minute in the room's tally. It stays
// open (not final in the room's eyes) until count records the decision's
// effect, or endUncounted closes it empty.
func (g *Gate) beginVisit(room *Room) visit {
	v := visit{room: room, st: room.state.Load()}
	v.now, v.minute = room.tally.Begin(g.now, v.st.snap.MinuteLength())
	return v
}

// endUncounted closes the minute of a visit that a step left before count
// (a panic): no minute stays open for good.
func (v *visit) endUncounted() {
	if !v.counted {
		v.room.tally.End(v.minute, admit.Effect{})
	}
}

// judge finds who the visitor is: the holder of its cookie of this room,
// or a new visitor. A queued visitor's try is guarded so that its copies
// of the cookie take one slot between them.
func (g *Gate) judge(r *http.Request, v *visit) {
	v.ck, v.sent, v.resealNeeded = g.openCookie(r, v.st, v.now)
	if v.ck != nil && v.ck.Admitted() && v.st.snap.Settings.RevokeEnabled() &&
		g.counters.Revocations.Revoked(v.room.name, v.ck.VisitorID, v.now) {
		// A session the origin revoked does not come back with its old
		// cookie. Checked in memory: an admitted visitor never waits on Redis.
		v.ck = nil
	}
	if v.ck == nil {
		v.visitor = newVisitorID()
		return
	}
	v.visitor, v.tries, v.expected = v.ck.VisitorID, v.ck.Attempts, v.ck.Attempts+1
	if !v.ck.Admitted() {
		v.guard = &attemptGuard{Strategy: g.counters.Strategy, marks: g.counters.Marks, room: v.room.name,
			visitor: v.visitor, tries: v.tries, expire: v.now.Add(QueuedCookieLifetime)}
	}
}

// decide asks the engine about the visitor on the room's snapshot.
func (g *Gate) decide(r *http.Request, v *visit) {
	in := admit.Input{Now: v.now, Snapshot: v.st.snap, Gate: g.cfg.Gate, Strategy: g.counters.Strategy}
	if v.ck != nil {
		in.Ticket = &v.ck.Ticket
	}
	if v.guard != nil {
		in.Strategy = v.guard
	}
	// The refresh jitter depends only on the visitor and its tries, so that
	// no copy of a cookie is told to come back sooner than another.
	in.Entropy = tryEntropy(v.visitor, v.expected)
	in.Lot = visitorLot(v.visitor)
	d, err := admit.Decide(r.Context(), in)
	v.d, v.moved = d, d.Effect
	if err != nil && !errors.Is(err, ErrCountersDown) && !errors.Is(err, ErrCountersBusy) {
		g.log.Warn("decide", "room", v.room.name, "err", err)
	}
	var unsure *admit.TakeError
	if errors.As(err, &unsure) {
		v.room.tally.Unsure(unsure)
	}
}

// count records the decision's effect in its minute, each visitor once a
// minute, and closes the minute; and the decision in the gate's metrics.
func (g *Gate) count(v *visit) {
	e, snap := &v.d.Effect, v.st.snap
	if e.Seen {
		*e = g.countVisit(v.room, snap, *e, v.visitor)
	}
	if e.Waiting > 0 && !v.room.waiting.Once(e.Minute, v.visitor, 2*snap.MinuteLength()) {
		e.Waiting, e.Bucket = 0, time.Time{} // a copy of a cookie counted this minute
	}
	if countsNothing(*e) {
		*e = admit.Effect{}
	}
	v.room.tally.End(v.minute, *e)
	v.counted = true
	g.tally.add(v.room.name, v.d.Outcome)
}

// seal gives the visitor the cookie it holds after this request, when that
// is not the one it sent, and records the session's move with it.
func (g *Gate) seal(w http.ResponseWriter, v *visit) {
	v.next = g.nextCookie(v)
	v.attrs = attributesFor(v.st.snap.Settings, v.st.cookieName, v.st.cookiePath)
	if v.next == v.ck {
		return
	}
	if sealed := g.sealCookie(v); sealed != "" {
		w.Header().Add("Set-Cookie", v.attrs.header(sealed, v.now, time.UnixMilli(v.next.Expires)))
	}
	if g.counters.Sessions != nil {
		g.counters.Sessions.Record(v.room.name, v.moved)
	}
}

// nextCookie is the cookie the visitor holds after this request: the one
// it sent, or a new one for the decision's ticket (set by the engine, or
// the sent one resealed with the primary key). A queued visitor whose try
// counted gets a refresh jittered for its next try.
func (g *Gate) nextCookie(v *visit) *Cookie {
	d := &v.d
	if d.Ticket == nil || !(d.SetTicket || v.resealNeeded) {
		return v.ck
	}
	next := &Cookie{Ticket: *d.Ticket, VisitorID: v.visitor, Attempts: v.tries}
	if v.guard != nil && v.guard.claimed {
		next.Attempts = v.guard.count
	}
	if !next.Admitted() && next.Attempts != v.expected {
		s := v.st.snap.Settings
		next.RefreshIntervalSeconds = admit.JitterRefresh(
			admit.RefreshBase(s.RefreshIntervalSeconds, v.st.snap.MinuteLength()), tryEntropy(v.visitor, next.Attempts))
		d.RefreshIn = time.Duration(next.RefreshIntervalSeconds) * time.Second
	}
	return next
}

// sealCookie seals v.next ("" if it cannot be). A running session's
// renewal is sealed once per cookie sent and renewal interval, however
// often that cookie comes back: the renewal sealed before replaces v.next,
// and its session move, recorded then, is not recorded again.
func (g *Gate) sealCookie(v *visit) string {
	length := v.st.snap.MinuteLength()
	renewal := v.ck != nil && v.ck.Admitted() && v.d.Outcome == admit.Pass && v.guard == nil
	if renewal {
		if c, sealed, ok := g.renewals.get(v.sent, v.room.name, v.now, length); ok {
			v.next, v.moved = c, admit.Effect{}
			return sealed
		}
	}
	v.next.Expires = cookieExpiry(v.next, v.st.snap, v.now).UnixMilli()
	sealed, err := g.codec.Seal(v.next)
	if err != nil {
		g.log.Error("seal cookie", "room", v.room.name, "err", err)
		return ""
	}
	if renewal {
		g.renewals.put(v.sent, v.next, sealed, v.now, length)
	}
	return sealed
}

// respond sends the request on to the origin, or answers a visitor who
// waits.
func (g *Gate) respond(w http.ResponseWriter, r *http.Request, v *visit) {
	switch v.d.Outcome {
	case admit.Bypass:
		g.proxy.ServeHTTP(w, r)
	case admit.Pass, admit.Admit:
		if v.st.snap.Settings.RevokeEnabled() {
			// What fromOrigin needs to end the session; other rooms spare
			// the request's copy.
			rs := &requestState{w: w, room: v.room, st: v.st, ck: v.next, now: v.now, a: v.attrs}
			r = r.WithContext(context.WithValue(r.Context(), stateKey{}, rs))
		}
		g.proxy.ServeHTTP(w, r)
	default:
		g.respondQueued(w, r, v.st, v.d, v.now)
	}
}
