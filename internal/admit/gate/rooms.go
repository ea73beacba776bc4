package gate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// Room is what a gate holds of one room: the snapshot it decides on (with
// what follows from it) and the tally of its decisions it reports.
type Room struct {
	name  string
	state atomic.Pointer[roomState]
	tally *admit.Tally

	counters counterLog
	visits   admit.Visits // who was counted in which minute (see Gate.countVisit)
	waiting  admit.Visits // who was counted waiting in which minute

	// reporting, owned by the Reporter
	nextReport time.Time
	lastMinute time.Time
	unsent     []admit.Report
	unwritten  []admit.Report // not yet taken by the data center's Redis (Reporter.Aggregate)
	// directMinutes are the minutes (Unix ms) whose reports go to the room
	// directly; unmarked those of them not yet marked so in Redis.
	directMinutes map[int64]bool
	unmarked      map[int64]admit.Report
}

// roomState is one snapshot and everything derived from it, immutable:
// requests read it with one atomic load.
type roomState struct {
	snap       *admit.Snapshot
	routed     bool   // the room takes traffic (not deleted)
	cookieName string // with the room's cookie_suffix
	cookiePath string
	pages      *roomPages    // the room's and its events' custom pages
	page       *pageTemplate // the one visitors see now, nil: the default page
	fetchedAt  time.Time     // when the gate read the snapshot
	// vanishedAt is when the gate found the room's workflow gone without
	// the room being deleted (zero: it is there); see Registry.Vanish.
	vanishedAt time.Time
}

// Pages are a room's custom pages: its custom_page_html, and that of each
// of its events that overrides it ("" for the default page).
type Pages struct {
	Room   string
	Events map[string]string // by event name
}

// PagesOf lists the custom pages of a room's settings and events.
func PagesOf(s admit.Settings, events []admit.Event) Pages {
	p := Pages{Room: s.CustomPageHTML}
	for _, e := range events {
		if e.CustomPageHTML != nil {
			if p.Events == nil {
				p.Events = map[string]string{}
			}
			p.Events[e.Name] = *e.CustomPageHTML
		}
	}
	return p
}

// pageTemplate is a parsed custom page, with the gate's verdict on it once
// it broke a bound (see Gate.renderCustom); page is nil when it did not
// parse, and the default page stands in for it.
type pageTemplate struct {
	page    *admit.Page
	verdict atomic.Pointer[pageVerdict]
}

// roomPages are a room's parsed pages; nil: the default page.
type roomPages struct {
	room   *pageTemplate
	events map[string]*pageTemplate // an event that shows the default page maps to nil
}

// parsePages parses a room's pages. A page that does not parse (the room
// validated it, so only a room saved before pages were restricted holds
// one) is replaced by the default page, counted as an error.
func parsePages(p Pages) (*roomPages, error) {
	var errs []error
	parse := func(what, src string) *pageTemplate {
		if src == "" {
			return nil
		}
		page, err := admit.ParsePage(src)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: custom_page_html %w", what, err))
			return &pageTemplate{}
		}
		return &pageTemplate{page: page}
	}
	rp := &roomPages{room: parse("the room", p.Room)}
	for _, name := range slices.Sorted(maps.Keys(p.Events)) { // errors in a stable order
		if rp.events == nil {
			rp.events = map[string]*pageTemplate{}
		}
		rp.events[name] = parse("event "+name, p.Events[name])
	}
	return rp, errors.Join(errs...)
}

// at is the page visitors see while ev affects the room (nil: no event):
// the event's own page while it pre-queues or runs, if it has one (the
// room applies it the same way, admit.Effective), else the room's.
func (p *roomPages) at(ev *admit.EventInfo) *pageTemplate {
	if p == nil {
		return nil
	}
	if ev != nil {
		if t, ok := p.events[ev.Name]; ok {
			return t
		}
	}
	return p.room
}

// Name is the room's name.
func (r *Room) Name() string { return r.name }

// Snapshot is the snapshot the gate decides on (nil before the first).
func (r *Room) Snapshot() *admit.Snapshot {
	if st := r.state.Load(); st != nil {
		return st.snap
	}
	return nil
}

// Tally is the room's tally of this gate's decisions.
func (r *Room) Tally() *admit.Tally { return r.tally }

// counterLog remembers, by minute, the shared counters the room's
// snapshots let the gate take slots from (pool and scope): once a minute
// is over, the gate reads what they handed out (Reporter.Store).
type counterLog struct {
	mu       sync.Mutex
	byMinute map[int64][]admit.PoolCount // by Unix ms; Count unused
}

// counterLogMinutes is how many minutes back the log keeps.
const counterLogMinutes = 4

// note records the counters of a snapshot: every pool's scopes in its
// minute, and the new visitors' pool's in the minute after (gates on a
// stale snapshot take from it there; see admit.StaleSpendable).
func (c *counterLog) note(snap *admit.Snapshot) {
	length := snap.MinuteLength()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byMinute == nil {
		c.byMinute = map[int64][]admit.PoolCount{}
	}
	add := func(m time.Time, p admit.Pool) {
		k := m.UnixMilli()
		for _, sc := range p.Scopes {
			e := admit.PoolCount{Pool: p.Key(), Scope: sc.Name}
			if !slices.Contains(c.byMinute[k], e) {
				c.byMinute[k] = append(c.byMinute[k], e)
			}
		}
	}
	for _, p := range snap.Pools {
		add(snap.Minute, p)
		if admit.StaleSpendable(p) {
			add(snap.Minute.Add(length), p)
		}
	}
	for k := range c.byMinute {
		if k < snap.Minute.Add(-counterLogMinutes*length).UnixMilli() {
			delete(c.byMinute, k)
		}
	}
}

// of lists the counters of minute m.
func (c *counterLog) of(m time.Time) []admit.PoolCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.byMinute[m.UnixMilli()])
}

// Registry holds the rooms a gate knows and the route table built from
// them. Requests only read it (one atomic load each); the watcher writes.
type Registry struct {
	gate   admit.Gate
	mu     sync.Mutex // writers
	rooms  map[string]*Room
	routes atomic.Pointer[routeTable]
}

// NewRegistry starts an empty registry for a gate.
func NewRegistry(g admit.Gate) *Registry {
	r := &Registry{gate: g, rooms: map[string]*Room{}}
	r.routes.Store(buildRoutes(nil))
	return r
}

// Update stores a room's new snapshot; page is its custom_page_html (nil
// when unchanged since the last call, "" for the default page), for a room
// whose events have no pages of their own (else UpdatePages).
func (g *Registry) Update(snap *admit.Snapshot, page *string, fetchedAt time.Time) error {
	if page == nil {
		return g.UpdatePages(snap, nil, fetchedAt)
	}
	return g.UpdatePages(snap, &Pages{Room: *page}, fetchedAt)
}

// UpdatePages stores a room's new snapshot; pages are its custom pages (nil
// when unchanged since the last call): visitors see the one of the event
// the snapshot names, else the room's. The route table is rebuilt when the
// room's routes, or whether it takes traffic, changed.
func (g *Registry) UpdatePages(snap *admit.Snapshot, pages *Pages, fetchedAt time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.rooms[snap.Room]
	if r == nil {
		r = &Room{name: snap.Room, tally: admit.NewTally(snap.Room, g.gate, uint64(max(0, fetchedAt.UnixMicro())))}
		g.rooms[snap.Room] = r
	}
	old := r.state.Load()
	st := &roomState{
		snap:       snap,
		routed:     snap.Status != admit.StatusDeleted,
		cookieName: CookieNameFor(snap.Settings.CookieSuffix),
		cookiePath: cookiePath(snap.Settings),
		fetchedAt:  fetchedAt,
	}
	var err error
	switch {
	case pages != nil:
		st.pages, err = parsePages(*pages)
	case old != nil:
		st.pages = old.pages
	}
	st.page = st.pages.at(snap.Event)
	r.state.Store(st)
	r.counters.note(snap)
	g.rebuildIfRoutesChanged(old, st)
	return err
}

func (g *Registry) rebuildIfRoutesChanged(old, st *roomState) {
	if old != nil && old.routed == st.routed && slices.Equal(old.snap.Settings.Routes(), st.snap.Settings.Routes()) &&
		old.snap.Settings.PathCaseInsensitive == st.snap.Settings.PathCaseInsensitive {
		return
	}
	g.rebuild()
}

// Vanish marks a room whose workflow is gone without the room having been
// deleted (terminated, failed, or no longer found): the gate keeps it and
// goes on deciding on its last snapshot, under the rules of any room that
// cannot publish (admit.InOutage: on the shared counters new visitors are
// admitted within both limits; past snapshot_max_age_seconds, or without
// shared counters, every new visitor is queued; admitted sessions pass),
// rather than pass its traffic to the origin. A room whose last snapshot says it was
// deleted is forgotten. It reports whether the room was newly marked.
func (g *Registry) Vanish(name string, at time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.rooms[name]
	if r == nil {
		return false
	}
	old := r.state.Load()
	if old == nil || old.snap.Status == admit.StatusDeleted {
		delete(g.rooms, name)
		g.rebuild()
		return false
	}
	if !old.vanishedAt.IsZero() {
		return false
	}
	st := *old
	st.vanishedAt = at
	r.state.Store(&st)
	return true
}

// ForgetVanished forgets the rooms that vanished before a time, and says
// which.
func (g *Registry) ForgetVanished(before time.Time) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var gone []string
	for name, r := range g.rooms {
		if st := r.state.Load(); st != nil && !st.vanishedAt.IsZero() && st.vanishedAt.Before(before) {
			delete(g.rooms, name)
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		g.rebuild()
	}
	return gone
}

// VanishedAt is when the room vanished (zero: it has not; see Vanish).
func (r *Room) VanishedAt() time.Time {
	if st := r.state.Load(); st != nil {
		return st.vanishedAt
	}
	return time.Time{}
}

// Remove forgets a room.
func (g *Registry) Remove(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.rooms[name]; ok {
		delete(g.rooms, name)
		g.rebuild()
	}
}

func (g *Registry) rebuild() {
	all := make([]*Room, 0, len(g.rooms))
	for _, r := range g.rooms {
		all = append(all, r)
	}
	g.routes.Store(buildRoutes(all))
}

// Match finds the room covering a request's host and path (nil: none).
func (g *Registry) Match(host, path string) *Room { return g.routes.Load().match(host, path) }

// Room returns a room by name.
func (g *Registry) Room(name string) *Room {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rooms[name]
}

// Rooms lists the rooms, by name.
func (g *Registry) Rooms() []*Room {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*Room, 0, len(g.rooms))
	for _, r := range g.rooms {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Room) int { return strings.Compare(a.name, b.name) })
	return out
}

// settingsVersion is the settings version of the room's snapshot, -1 if it
// has none.
func (g *Registry) settingsVersion(name string) int64 {
	if r := g.Room(name); r != nil {
		if s := r.Snapshot(); s != nil {
			return s.SettingsVersion
		}
	}
	return -1
}
