package versions

import (
	"slices"
	"strings"
	"testing"
)

// The edge refuses a requested version exactly when the update check would
// not offer it, and says why.
func TestRulesRefusal(t *testing.T) {
	available := []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0-beta.1", "2.0.0", "2.1.0", "3.0.0-rc.1", "nightly"}
	published := map[string]bool{"1.1.0": true, "1.2.0": true}
	rules := Rules{
		Ignore:      []string{"2.0.*"},
		Rejected:    map[string]string{"2.1.0": "the fileMap selects no file of this version"},
		FirstImport: 10,
		Window:      &Window{Floor: "1.1.0", Seen: "2.0.0-beta.1"},
	}
	tests := []struct {
		version, want string // want: "" offered, else a part of the reason
	}{
		{"3.0.0-rc.1", ""},
		{"9.9.9", "does not list"},
		{"1.2.0", "already published"},
		{"nightly", "not a semantic version"},
		{"2.0.0", "ignoreVersions"},
		{"2.1.0", "rejected: the fileMap selects no file"},
		{"1.0.0", "older than 1.1.0"},
	}
	offered, _ := rules.Offer(available, published)
	for _, tt := range tests {
		got := rules.Refusal(tt.version, available, published)
		switch {
		case tt.want == "" && got != "":
			t.Errorf("Refusal(%s) = %q, want it offered", tt.version, got)
		case tt.want != "" && !strings.Contains(got, tt.want):
			t.Errorf("Refusal(%s) = %q, want a reason with %q", tt.version, got, tt.want)
		}
		// The two answers never disagree.
		if (got == "") != slices.Contains(offered, tt.version) {
			t.Errorf("Refusal(%s) = %q but Offer gives %v", tt.version, got, offered)
		}
	}
}

// Offer is NewVersionsIn over the versions no rejection marker holds for:
// what CheckPackages did before it called Offer.
func TestRulesOfferLeavesOutRejected(t *testing.T) {
	available := []string{"1.0.0", "1.1.0", "1.2.0"}
	rules := Rules{Rejected: map[string]string{"1.1.0": "hostile archive"}, FirstImport: 10}
	got, decided := rules.Offer(available, map[string]bool{})
	if want := []string{"1.0.0", "1.2.0"}; !slices.Equal(got, want) {
		t.Errorf("Offer = %v, want %v", got, want)
	}
	if decided == nil || decided.Floor != "1.0.0" || decided.Seen != "1.2.0" {
		t.Errorf("first import's window = %+v, want floor 1.0.0 and seen 1.2.0", decided)
	}
}

// A package new to the catalog takes its newest versions only: a request
// for an older one is refused as the first import would leave it out.
func TestRulesRefusalFirstImport(t *testing.T) {
	available := []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0"}
	rules := Rules{FirstImport: 2}
	if got := rules.Refusal("1.3.0", available, nil); got != "" {
		t.Errorf("newest version refused: %q", got)
	}
	if got := rules.Refusal("1.0.0", available, nil); !strings.Contains(got, "2 newest") {
		t.Errorf("Refusal(1.0.0) = %q, want the first import's reason", got)
	}
	published := map[string]bool{"1.2.0": true}
	if got := rules.Refusal("1.1.0", available, published); !strings.Contains(got, "oldest version published") {
		t.Errorf("Refusal(1.1.0) below what is published = %q", got)
	}
}
