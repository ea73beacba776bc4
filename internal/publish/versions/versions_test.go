package versions

import (
	"slices"
	"testing"
)

func TestLatest(t *testing.T) {
	tests := []struct {
		name     string
		versions []string
		want     string
	}{
		{"empty", nil, ""},
		{"highest stable wins over newer prerelease", []string{"1.0.0", "2.0.0-beta.1", "1.10.0", "1.9.9"}, "1.10.0"},
		{"numeric not lexical", []string{"1.9.0", "1.10.0", "1.2.0"}, "1.10.0"},
		{"only prereleases gives highest prerelease", []string{"2.0.0-alpha.1", "2.0.0-beta.1", "2.0.0-alpha.10"}, "2.0.0-beta.1"},
		{"prerelease numeric identifiers", []string{"1.0.0-rc.2", "1.0.0-rc.10"}, "1.0.0-rc.10"},
		{"unparsable ignored", []string{"banana", "0.1.0", "latest"}, "0.1.0"},
		{"all unparsable", []string{"banana", "nightly"}, ""},
		{"git style tags parse", []string{"v1", "1.4"}, "1.4"},
		{"build metadata does not outrank", []string{"1.0.0+build.5", "1.0.1"}, "1.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Latest(tt.versions); got != tt.want {
				t.Errorf("Latest(%q) = %q, want %q", tt.versions, got, tt.want)
			}
		})
	}
}

func TestSort(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"empty", []string{}, []string{}},
		{
			"semver order with prereleases before their release",
			[]string{"1.10.0", "1.2.0", "1.2.0-rc.1", "0.9.0", "1.2.0-beta.2", "1.2.0-beta.10"},
			[]string{"0.9.0", "1.2.0-beta.2", "1.2.0-beta.10", "1.2.0-rc.1", "1.2.0", "1.10.0"},
		},
		{
			"unparsable last in lexical order",
			[]string{"zeta", "2.0.0", "alpha", "1.0.0"},
			[]string{"1.0.0", "2.0.0", "alpha", "zeta"},
		},
		{
			"equal versions spelled differently are ordered by string",
			[]string{"1.0.0", "1.0", "v1.0.0"},
			[]string{"1.0", "1.0.0", "v1.0.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Clone(tt.in)
			Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Sort(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestIgnored(t *testing.T) {
	tests := []struct {
		version string
		globs   []string
		want    bool
	}{
		{"1.0.0", nil, false},
		{"1.0.0", []string{"1.0.0"}, true},
		{"2.0.0-beta.3", []string{"*-beta*"}, true},
		{"2.0.0", []string{"*-beta*"}, false},
		{"0.3.1", []string{"0.*"}, true},
		{"1.0.1", []string{"1.0.?"}, true},
		{"1.0.10", []string{"1.0.?"}, false},
		{"1.0.2", []string{"1.0.{1,2}"}, true}, // the catalog's glob dialect, braces included
		{"1.0.3", []string{"1.0.{1,2}"}, false},
		{"1.0.0", []string{"[", "1.*"}, true}, // an invalid glob does not stop the others
		{"[", []string{"["}, false},           // and matches nothing itself
	}
	for _, tt := range tests {
		if got := Ignored(tt.version, tt.globs); got != tt.want {
			t.Errorf("Ignored(%q, %q) = %v, want %v", tt.version, tt.globs, got, tt.want)
		}
	}
}

func TestNewVersions(t *testing.T) {
	available := []string{"1.0.0", "1.1.0", "2.0.0-beta.1", "1.2.0", "2.0.0", "0.9.0", "nightly", "2.1.0-rc.1"}
	tests := []struct {
		name        string
		available   []string
		published   map[string]bool
		ignore      []string
		firstImport int
		want        []string
	}{
		{
			name:      "existing package gets every missing version oldest first, prereleases included",
			available: available,
			published: map[string]bool{"1.0.0": true, "0.9.0": true},
			want:      []string{"1.1.0", "1.2.0", "2.0.0-beta.1", "2.0.0", "2.1.0-rc.1"},
		},
		{
			name:        "firstImport does not limit an existing package",
			available:   available,
			published:   map[string]bool{"0.9.0": true},
			firstImport: 1,
			want:        []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0-beta.1", "2.0.0", "2.1.0-rc.1"},
		},
		{
			name:      "history older than the oldest published version stays out",
			available: available,
			published: map[string]bool{"2.0.0": true},
			want:      []string{"2.1.0-rc.1"},
		},
		{
			name:      "a backport newer than the oldest published version is taken",
			available: append([]string{"1.2.1"}, available...),
			published: map[string]bool{"1.2.0": true, "2.0.0": true},
			want:      []string{"1.2.1", "2.0.0-beta.1", "2.1.0-rc.1"},
		},
		{
			name:      "ignored globs are skipped",
			available: available,
			published: map[string]bool{"0.9.0": true},
			ignore:    []string{"*-*", "1.1.0"},
			want:      []string{"1.0.0", "1.2.0", "2.0.0"},
		},
		{
			name:      "nothing new",
			available: []string{"1.0.0"},
			published: map[string]bool{"1.0.0": true},
			want:      []string{},
		},
		{
			name:        "new package takes the newest stable versions only",
			available:   available,
			published:   nil,
			firstImport: 2,
			want:        []string{"1.2.0", "2.0.0"},
		},
		{
			name:        "new package with no limit takes every stable version",
			available:   available,
			published:   map[string]bool{},
			firstImport: 0,
			want:        []string{"0.9.0", "1.0.0", "1.1.0", "1.2.0", "2.0.0"},
		},
		{
			name:        "new package ignore applies before the limit",
			available:   available,
			ignore:      []string{"2.*"},
			firstImport: 2,
			want:        []string{"1.1.0", "1.2.0"},
		},
		{
			name:        "new package with only prereleases takes the newest prereleases",
			available:   []string{"1.0.0-alpha.1", "1.0.0-beta.1", "1.0.0-alpha.2"},
			firstImport: 2,
			want:        []string{"1.0.0-alpha.2", "1.0.0-beta.1"},
		},
		{
			name:        "a false entry in published does not count as published",
			available:   []string{"1.0.0", "1.1.0"},
			published:   map[string]bool{"1.0.0": false},
			firstImport: 1,
			want:        []string{"1.1.0"},
		},
		{
			name:      "duplicates in available appear once",
			available: []string{"1.1.0", "1.1.0", "1.0.0"},
			published: map[string]bool{"1.0.0": true},
			want:      []string{"1.1.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewVersions(tt.available, tt.published, tt.ignore, tt.firstImport)
			if !slices.Equal(got, tt.want) {
				t.Errorf("NewVersions = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	published := []string{"1.0.0", "1.2.3", "1.10.0", "2.0.0", "2.0.1", "2.1.0", "3.0.0-beta.1", "3.1.0", "3.1.4", "3.2.0", "4.0.0-rc.1"}
	tests := []struct {
		spec   string
		want   string
		wantOK bool
	}{
		{"latest", "3.2.0", true},
		{"", "3.2.0", true},
		{"2.0.1", "2.0.1", true},
		{"3.0.0-beta.1", "3.0.0-beta.1", true},
		{"4.0.0-rc.1", "4.0.0-rc.1", true},
		{"9.9.9", "", false},
		{"1", "1.10.0", true},
		{"1.2", "1.2.3", true},
		{"3", "3.2.0", true},
		{"3.1", "3.1.4", true},
		{"^3.1", "3.2.0", true},
		{"^1.2.0", "1.10.0", true},
		{"~2.0.1", "2.0.1", true},
		{"~2.0", "2.0.1", true},
		{">=1 <2", "1.10.0", true},
		{">=1, <2", "1.10.0", true},
		{"1 - 2", "2.1.0", true},
		{"2.x", "2.1.0", true},
		{"*", "3.2.0", true},
		{"^4", "", false},                   // only a prerelease exists: ranges want stable
		{"^4.0.0-rc.0", "4.0.0-rc.1", true}, // unless the range names a prerelease
		{"5", "", false},
		{"not-a-version", "", false},
		{"1.2.3.4", "", false},
	}
	for _, tt := range tests {
		got, ok := Resolve(published, tt.spec)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Resolve(%q) = %q, %v; want %q, %v", tt.spec, got, ok, tt.want, tt.wantOK)
		}
	}

	if got, ok := Resolve(nil, "latest"); ok || got != "" {
		t.Errorf("Resolve(nil, latest) = %q, %v; want \"\", false", got, ok)
	}
	if got, ok := Resolve([]string{"1.0.0-beta"}, "latest"); !ok || got != "1.0.0-beta" {
		t.Errorf("Resolve of a prerelease-only package = %q, %v; want 1.0.0-beta, true", got, ok)
	}
}

// TestImportWindowHoldsAcrossChecks is dayjs's case: the first import takes
// the newest stable versions; the second check must not offer the older
// 2.0.0-alpha prereleases it left out, nor versions below the window; a
// first-import version that failed is retried, not lost below the oldest
// published one; what is released later is offered.
func TestImportWindowHoldsAcrossChecks(t *testing.T) {
	available := []string{"1.0.0", "1.1.0", "1.2.0-beta.1", "1.2.0", "1.3.0", "2.0.0-alpha.1", "2.0.0-alpha.2"}
	first, window := NewVersionsIn(available, map[string]bool{}, nil, 3, nil)
	if !slices.Equal(first, []string{"1.1.0", "1.2.0", "1.3.0"}) || window == nil || *window != (Window{Floor: "1.1.0", Seen: "2.0.0-alpha.2"}) {
		t.Fatalf("first import %v, window %+v", first, window)
	}
	// 1.1.0 failed transiently; the rest published.
	published := map[string]bool{"1.2.0": true, "1.3.0": true}
	if got := NewVersions(available, published, nil, 3); !slices.Contains(got, "2.0.0-alpha.1") {
		t.Fatalf("without the window the alphas are offered (the old defect): %v", got)
	}
	got, decided := NewVersionsIn(available, published, nil, 3, window)
	if !slices.Equal(got, []string{"1.1.0"}) || decided != nil {
		t.Errorf("second check %v; want only the failed 1.1.0 retried", got)
	}
	// Later releases: a new prerelease, a backport, a new major.
	later := append(slices.Clone(available), "2.0.0-alpha.3", "1.3.1", "2.0.0")
	published["1.1.0"] = true
	got, _ = NewVersionsIn(later, published, nil, 3, window)
	if !slices.Equal(got, []string{"1.3.1", "2.0.0-alpha.3", "2.0.0"}) {
		t.Errorf("after new releases %v", got)
	}
}
