package console

import (
	"net/http"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
)

// Minute is one of a room's recent minutes: admitted, queued and active
// users, as the room recorded them when the minute closed.
type Minute struct {
	Minute         time.Time    `json:"minute"`
	Admitted       int          `json:"admitted"`
	Queued         int          `json:"queued"`
	Active         int          `json:"active"`
	SlotsAvailable int          `json:"slots_available"`
	Status         admit.Status `json:"status"`
	// DataCenters are the minute's counts by data center as the room kept
	// them: its admit.RecentDataCenters busiest by name and "others" for
	// the rest (none in minutes recorded before rooms kept them).
	DataCenters []DataCenterMinute `json:"data_centers,omitempty"`
}

// DataCenterMinute is one data center's part of a minute: admitted in it,
// queued at its end, active (distinct sessions its gates saw).
type DataCenterMinute struct {
	DataCenter string `json:"data_center"`
	Admitted   int    `json:"admitted"`
	Queued     int    `json:"queued"`
	Active     int    `json:"active"`
}

// Minutes is GET /api/v1/waiting_rooms/{name}/minutes.
type Minutes struct {
	// MinuteSeconds is the room's minute (60 but in tests).
	MinuteSeconds int      `json:"minute_seconds"`
	Minutes       []Minute `json:"minutes"` // oldest first, at most admit.RecentMinutes
	// ByDataCenter says some minutes carry their counts by data center
	// (data_centers); a room keeps them for its recent minutes, within its
	// state's bound (docs/admit.md).
	ByDataCenter bool `json:"by_data_center"`
}

// minutes answers the room's last 60 minutes from its own record (the
// describe query's recent minutes): bounded by the room, which keeps at
// most admit.RecentMinutes of them (fewer while its state is near its
// history bound).
func (a roomAPI) minutes(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	name, err := roomName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	d, err := a.rc.Describe(ctx, name)
	if err == nil && d.Deleted {
		err = roomclient.ErrDeleted
	}
	if err != nil {
		return 0, nil, nil, err
	}
	out := Minutes{MinuteSeconds: d.MinuteSeconds, Minutes: []Minute{}}
	recent := d.Recent
	if len(recent) > admit.RecentMinutes {
		recent = recent[len(recent)-admit.RecentMinutes:]
	}
	for _, m := range recent {
		mo := Minute{Minute: m.Minute, Admitted: m.Admitted, Queued: m.Waiting,
			Active: m.ActiveUsers, SlotsAvailable: m.SlotsAvailable, Status: m.Status}
		for _, dc := range m.DataCenters {
			mo.DataCenters = append(mo.DataCenters, DataCenterMinute{DataCenter: dc.DataCenter, Admitted: dc.Admitted, Queued: dc.Queued, Active: dc.Active})
		}
		out.ByDataCenter = out.ByDataCenter || len(mo.DataCenters) > 0
		out.Minutes = append(out.Minutes, mo)
	}
	return http.StatusOK, out, nil, nil
}
