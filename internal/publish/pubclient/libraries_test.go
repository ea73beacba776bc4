package pubclient

import (
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

func TestVersionsOfMergesEverySource(t *testing.T) {
	pkg := catalog.Package{Name: "lib", Autoupdate: catalog.Autoupdate{Source: "npm", Target: "lib", IgnoreVersions: []string{"*-beta*"}}}
	doc := &metadata.Package{Versions: []string{"1.0.0", "1.1.0"}, Incomplete: []string{"1.1.0"}, Latest: "1.0.0"}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rejections := []metadata.Rejection{{Name: "lib", Version: "1.2.0", Type: "BadArchive", Reason: "a link out of the archive", At: at}}
	runs := []Run{ // newest first
		{Version: "1.4.0", WorkflowID: "publish/lib@1.4.0", RunID: "r6", Running: true},
		{Version: "1.3.0", WorkflowID: "publish/lib@1.3.0", RunID: "r5", Failed: true, Closed: at},
		{Version: "1.2.0", WorkflowID: "publish/lib@1.2.0", RunID: "r4", Failed: true, Closed: at},
		{Version: "1.0.0", WorkflowID: "publish/lib@1.0.0", RunID: "r3"},
		{Version: "1.0.0", WorkflowID: "publish/lib@1.0.0", RunID: "r2", Failed: true, Closed: at},
		{Version: "1.3.0", WorkflowID: "publish/lib@1.3.0", RunID: "r1"},
	}
	got := versionsOf(pkg, doc, rejections, runs, []string{"1.0.0", "1.5.0-beta.1", "1.4.0", "0.9.0"})
	want := []struct{ version, state, runID, rule string }{
		{"1.5.0-beta.1", StateSkipped, "", "ignoreVersions: *-beta*"},
		{"1.4.0", StatePublishing, "r6", ""},
		{"1.3.0", StateFailed, "r5", ""},
		{"1.2.0", StateRejected, "r4", ""},  // the marker's reason beats the run's failure
		{"1.1.0", StateIncomplete, "", ""},  // no retained run
		{"1.0.0", StatePublished, "r3", ""}, // an earlier failed run does not count
	}
	if len(got) != len(want) {
		t.Fatalf("got %d versions, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Version != w.version || g.State != w.state || g.RunID != w.runID || g.Rule != w.rule {
			t.Errorf("versions[%d] = %+v, want %+v", i, g, w)
		}
	}
	if got[3].Reason != "a link out of the archive" || got[3].Type != "BadArchive" || got[3].At == nil {
		t.Errorf("the rejection: %+v", got[3])
	}
}

func TestLibraryOfState(t *testing.T) {
	pkg := catalog.Package{Name: "lib"}
	for _, c := range []struct {
		doc     *metadata.Package
		running bool
		want    string
	}{
		{nil, false, StateNotPublished},
		{&metadata.Package{Versions: []string{"1.0.0"}, Latest: "1.0.0"}, false, StatePublished},
		{&metadata.Package{Versions: []string{"1.0.0"}, Incomplete: []string{"1.0.0"}}, false, StateIncomplete},
		{&metadata.Package{Versions: []string{"1.0.0"}}, true, StatePublishing},
	} {
		if got := libraryOf(pkg, c.doc, time.Time{}, c.running); got.State != c.want || got.LastCheck != nil || got.WorkflowID != "publish-package/lib" {
			t.Errorf("%+v running %v: %+v, want state %s", c.doc, c.running, got, c.want)
		}
	}
}
