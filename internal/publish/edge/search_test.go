package edge

import (
	"reflect"
	"testing"

	"github.com/edgeflow/edgeflow/internal/textdist"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

func searchFixture() *searchIndex {
	return newSearchIndex([]metadata.IndexEntry{
		{Name: "jquery", Description: "JavaScript library for DOM operations", Keywords: []string{"jquery", "dom"}},
		{Name: "jquery-ui", Description: "User interface interactions built on jQuery", Keywords: []string{"ui"}},
		{Name: "jquery.form", Description: "Submit forms with AJAX", Keywords: []string{"form", "ajax"}},
		{Name: "react", Description: "A JavaScript library for building user interfaces", Keywords: []string{"ui", "virtual-dom"}},
		{Name: "react-dom", Description: "React package for working with the DOM", Keywords: []string{"dom"}},
		{Name: "preact", Description: "Fast 3kb React alternative", Keywords: []string{"virtual dom"}},
		{Name: "font-awesome", Description: "The iconic SVG, font, and CSS toolkit", Keywords: []string{"icons", "font"}},
		{Name: "lodash.js", Description: "A modern JavaScript utility library", Keywords: []string{"utility", "functional"}},
		{Name: "moment.js", Description: "Parse, validate, manipulate, and display dates", Keywords: []string{"date", "time"}},
		{Name: "vue", Description: "Progressive framework for building user interfaces", Keywords: []string{"framework"}},
		{Name: "vuex", Description: "State management for Vue", Keywords: []string{"state"}},
		{Name: "pikaday", Description: "A refreshing JavaScript Datepicker", Keywords: []string{"datepicker", "calendar"}},
		{Name: "Chart.js", Description: "Simple HTML5 charts using the canvas element", Keywords: []string{"charts"}},
	})
}

func names(hits []searchHit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, h.lib.Name)
	}
	return out
}

func TestSearchRanking(t *testing.T) {
	ix := searchFixture()
	cases := []struct {
		query string
		want  []string // the first results, in order
	}{
		// Exact name, then prefix, then substring, then fuzzy, then keywords.
		{"react", []string{"react", "react-dom", "preact"}},
		{"jquery", []string{"jquery", "jquery-ui", "jquery.form"}},
		{"vue", []string{"vue", "vuex"}},
		// Typos in names: transpositions, deletions, insertions, substitutions.
		{"jqeury", []string{"jquery", "jquery-ui", "jquery.form"}},
		{"recat", []string{"react"}},
		{"jqury", []string{"jquery"}},
		{"lodahs", []string{"lodash.js"}},
		{"momnet", []string{"moment.js"}},
		{"fontawsome", []string{"font-awesome"}},
		{"font awesome", []string{"font-awesome"}},
		{"prect", []string{"preact"}},
		// Separators and case do not matter.
		{"lodash", []string{"lodash.js"}},
		{"chartjs", []string{"Chart.js"}},
		{"CHART", []string{"Chart.js"}},
		{"awesome", []string{"font-awesome"}},
		// Keywords and descriptions.
		{"datepicker", []string{"pikaday"}},
		{"calendar", []string{"pikaday"}},
		{"iconic", []string{"font-awesome"}},
		{"utility", []string{"lodash.js"}},
		{"utilty", []string{"lodash.js"}},
		// Every word of a multi-word query must match.
		{"state vue", []string{"vuex"}},
	}
	for _, c := range cases {
		got := names(ix.search(c.query, defaultSearchFields))
		if len(got) < len(c.want) || !reflect.DeepEqual(got[:len(c.want)], c.want) {
			t.Errorf("search %q = %v, want it to start with %v", c.query, got, c.want)
		}
	}
}

func TestSearchTierOrder(t *testing.T) {
	ix := searchFixture()
	hits := ix.search("dom", defaultSearchFields)
	// "react-dom" has dom in its name; jquery and others only in keywords or descriptions.
	if len(hits) < 3 || hits[0].lib.Name != "react-dom" || hits[0].tier != tierNameSubstring {
		t.Fatalf("dom: %v", names(hits))
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].tier < hits[i-1].tier {
			t.Errorf("hits out of tier order: %v", hits)
		}
	}
	if got := names(ix.search("jqeury", defaultSearchFields)); got[0] != "jquery" || ix.search("jqeury", defaultSearchFields)[0].tier != tierNameFuzzy {
		t.Errorf("jqeury: %v", got)
	}
}

func TestSearchTolerance(t *testing.T) {
	ix := searchFixture()
	// Short queries tolerate no typo at one or two letters, one up to five.
	for _, q := range []string{"xq", "zzzz", "qwertyuiop"} {
		if got := names(ix.search(q, defaultSearchFields)); len(got) != 0 {
			t.Errorf("search %q matched %v", q, got)
		}
	}
	if got := names(ix.search("vux", searchFields{name: true})); len(got) == 0 || got[0] != "vue" && got[0] != "vuex" {
		t.Errorf("one typo in a short name: %v", got)
	}
	// Three edits are too many even for long names.
	if got := names(ix.search("jqxxxry", searchFields{name: true})); len(got) != 0 {
		t.Errorf("three edits matched %v", got)
	}
	// search_fields restricts where to look.
	if got := names(ix.search("toolkit", searchFields{name: true, keywords: true})); len(got) != 0 {
		t.Errorf("toolkit outside descriptions: %v", got)
	}
	if got := ix.search("", defaultSearchFields); len(got) != 0 {
		t.Errorf("empty query: %v", names(got))
	}
}

func TestParseSearchFields(t *testing.T) {
	if got := parseSearchFields("name,bogus"); got != (searchFields{name: true}) {
		t.Errorf("name,bogus: %+v", got)
	}
	if got := parseSearchFields("bogus"); got != defaultSearchFields {
		t.Errorf("unknown only: %+v", got)
	}
	if got := parseSearchFields(""); got != defaultSearchFields {
		t.Errorf("empty: %+v", got)
	}
}

func TestOSADistance(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "abc", 0},
		{"ca", "ac", 1},
		{"jquery", "jqeury", 1},
		{"kitten", "sitting", 3},
		{"react", "recat", 1},
		{"abc", "", 3},
		{"lodash", "lodahs", 1},
	}
	for _, c := range cases {
		if got := textdist.Distance(c.a, c.b, 10); got != c.want {
			t.Errorf("osa(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	// The early exit never reports a distance within the bound that is not.
	if d, ok := withinEdits("kitten", "sitting", 2); ok {
		t.Errorf("kitten/sitting within 2 edits (%d)", d)
	}
}
