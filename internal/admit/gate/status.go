package gate

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// RoomStatus is what a gate tells about one room on its status endpoint.
type RoomStatus struct {
	Room           string        `json:"room"`
	Routes         []admit.Route `json:"routes"`
	Status         admit.Status  `json:"status"`
	Seq            int64         `json:"seq"`
	Minute         time.Time     `json:"minute"`
	PublishedAt    time.Time     `json:"publishedAt"`
	FetchedAt      time.Time     `json:"fetchedAt"`
	Stale          bool          `json:"stale"` // older than its maximum age: outside an outage nothing of its minute is spent; in one (admit.InOutage) the outage's rules decide
	CustomPage     bool          `json:"customPage"`
	CookieName     string        `json:"cookieName"`
	SlotsAvailable int           `json:"slotsAvailable"`
	// Vanished says the room's workflow is gone without the room having
	// been deleted (since VanishedAt): the gate decides on its last
	// snapshot, by the outage's rules (admit.InOutage).
	Vanished   bool      `json:"vanished,omitempty"`
	VanishedAt time.Time `json:"vanishedAt,omitzero"`
	// Counted is what this gate counted in the room's recent minutes, as
	// it reports them to the room.
	Counted []MinuteCounted `json:"counted,omitempty"`
}

// MinuteCounted is one minute of a gate's counts.
type MinuteCounted struct {
	Minute      time.Time `json:"minute"`
	NewVisitors int       `json:"newVisitors"`
	Admitted    int       `json:"admitted"`
	Seen        int       `json:"activeSessionsSeen"`
	Final       bool      `json:"final,omitempty"` // nothing more will be counted in it
	// StoreTaken is what the shared counters had handed out in the minute
	// when it was over, by every gate (see admit.Report.StoreTaken).
	StoreTaken []admit.PoolCount `json:"storeTaken,omitempty"`
}

// GateStatus is the gate's status document.
type GateStatus struct {
	Gate     admit.Gate `json:"gate"`
	Counters string     `json:"counters"`      // the strategy
	State    string     `json:"countersState"` // shared, down or recovering (Redis); shared in process

	Rooms []RoomStatus `json:"rooms"`
	// Warnings are what an operator should fix.
	Warnings []string `json:"warnings,omitempty"`
}

// WarningNoHosts is shown while a room names a host and the gate accepts
// every Host.
const WarningNoHosts = "a room names a host, but this gate accepts every Host (no --hosts): a request with another Host, or none, bypasses that room"

// Status describes the gate and the rooms it decides for.
func (g *Gate) Status() GateStatus {
	now := g.now()
	out := GateStatus{Gate: g.cfg.Gate, Counters: g.counters.Strategy.Name(), State: StateShared, Rooms: []RoomStatus{}}
	if f := g.counters.Failover; f != nil {
		out.State = f.State()
	}
	hostScoped := false
	for _, r := range g.rooms.Rooms() {
		st := r.state.Load()
		if st == nil {
			continue
		}
		s := st.snap
		if st.routed && slices.ContainsFunc(s.Settings.Routes(), func(rt admit.Route) bool { return rt.Host != "" }) {
			hostScoped = true
		}
		rs := RoomStatus{Room: r.name, Routes: s.Settings.Routes(), Status: s.Status, Seq: s.Seq,
			Minute: s.Minute, PublishedAt: s.PublishedAt, FetchedAt: st.fetchedAt, Stale: s.Stale(now),
			CustomPage: st.page != nil, CookieName: st.cookieName, SlotsAvailable: s.SlotsAvailable,
			Vanished: !st.vanishedAt.IsZero(), VanishedAt: st.vanishedAt}
		for _, rep := range r.tally.Kept() {
			rs.Counted = append(rs.Counted, MinuteCounted{Minute: rep.Minute, NewVisitors: rep.NewVisitors, Admitted: rep.Admitted,
				Seen: rep.Seen, Final: rep.Final, StoreTaken: rep.StoreTaken})
		}
		out.Rooms = append(out.Rooms, rs)
	}
	if hostScoped && g.hosts == nil {
		out.Warnings = append(out.Warnings, WarningNoHosts)
	}
	return out
}

// StatusHandler serves /healthz (liveness: the gate keeps deciding on its
// last snapshots while Temporal or Redis are down) and /status (GateStatus
// as JSON), on the gate's separate health address.
func (g *Gate) StatusHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(g.Status())
	})
	return mux
}
