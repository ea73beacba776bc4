package sim

import (
	"context"
	"testing"
	"time"
)

// The scale section's room gets one report per data center and minute,
// whatever the number of gates, as gates reporting through their data
// center's Redis send it.
func TestRoomLoadGrowsWithDataCenters(t *testing.T) {
	tops := []Topology{
		{DataCenters: 3, GatesPerDataCenter: 2, PropagationDelay: time.Second, ReportInterval: 5 * time.Second},
		{DataCenters: 3, GatesPerDataCenter: 8, PropagationDelay: time.Second, ReportInterval: 5 * time.Second},
	}
	loads, err := MeasureRoomLoad(context.Background(), 1, tops, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range loads {
		if l.ReportsPerMinute != 3 {
			t.Errorf("%d × %d gates: %.2f reports a minute, want 3 (one per data center)", l.DataCenters, l.GatesPerDataCenter, l.ReportsPerMinute)
		}
	}
}
