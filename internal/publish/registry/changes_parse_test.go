package registry

import "testing"

// CouchDB 2 and later write sequences as strings, npm as numbers: either
// is kept as written, to be sent back as since.
func TestParseChangesKeepsSequencesAsWritten(t *testing.T) {
	page, err := parseChanges([]byte(`{"results":[{"seq":"12-g1AAAA","id":"a","changes":[]},{"seq":41000000001,"id":"b","deleted":true}],"last_seq":41000000001}`), "feed")
	if err != nil {
		t.Fatal(err)
	}
	if page.Results[0].Seq != "12-g1AAAA" || page.Results[1].Seq != "41000000001" || !page.Results[1].Deleted || page.LastSeq != "41000000001" {
		t.Fatalf("%+v", page)
	}
	for _, bad := range []string{`{"results":[]}`, `{"results":[{"id":"a"}],"last_seq":1}`, `not json`} {
		if _, err := parseChanges([]byte(bad), "feed"); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
