package contract

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

func TestOutcomesCount(t *testing.T) {
	var c Outcomes
	for _, o := range []VersionOutcome{
		{Name: "a", Version: "1", Outcome: OutcomePublished},
		{Name: "a", Version: "2", Outcome: OutcomeAlreadyPublished},
		{Name: "a", Version: "3", Outcome: OutcomeInProgress},
		{Name: "a", Version: "4", Outcome: OutcomeSkipped, Error: "fileMap selects nothing"},
		{Name: "a", Version: "5", Outcome: OutcomeFailed, Error: "a@5: boom"},
		{Name: "a", Version: "6", Outcome: "something new", Error: "a@6: ?"},
	} {
		c.Count(o)
	}
	want := Outcomes{Published: 1, AlreadyPublished: 1, InProgress: 1, Failed: 2, Skipped: 1,
		Failures: []string{"a@5: boom", "a@6: ?"}, Skips: []string{"a@4: fileMap selects nothing"}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
	for i := range 2 * MaxListed {
		c.Count(VersionOutcome{Outcome: OutcomeFailed, Error: fmt.Sprint(i)})
	}
	if c.Failed != 2+2*MaxListed || len(c.Failures) != MaxListed {
		t.Errorf("%d failed, %d listed", c.Failed, len(c.Failures))
	}
}

// Embedded, the counts keep the JSON names running workflows and starters
// already exchange (flat, not nested under "Outcomes").
func TestStatsJSONNamesUnchanged(t *testing.T) {
	for _, v := range []any{
		LaneStats{Outcomes: Outcomes{Published: 1, Skipped: 2}, ContinuedAsNew: 3},
		UpdatesStats{Queued: 4, Outcomes: Outcomes{Failed: 5, Failures: []string{"x"}}},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"published", "alreadyPublished", "inProgress", "failed"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%T: no %q in %s", v, k, b)
			}
		}
		if _, ok := m["Outcomes"]; ok {
			t.Errorf("%T nests its counts: %s", v, b)
		}
	}
	var l LaneStats
	if err := json.Unmarshal([]byte(`{"published":7,"skips":["a@1: x"],"continuedAsNew":2}`), &l); err != nil || l.Published != 7 || len(l.Skips) != 1 || l.ContinuedAsNew != 2 {
		t.Errorf("decoded %+v, %v", l, err)
	}
}
