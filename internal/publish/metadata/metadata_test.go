package metadata

import (
	"slices"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
)

func TestAddVersion(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	entry := catalog.Package{Name: "lib", Description: "now"}
	p := Package{Package: catalog.Package{Name: "lib", Description: "before"}, Versions: []string{"1.10.0", "1.2.0"}}
	p.AddVersion(entry, "2.0.0-beta.1", at)
	p.AddVersion(entry, "1.9.0", at)
	p.AddVersion(entry, "1.9.0", at) // a retried commit lists it once
	if !slices.Equal(p.Versions, []string{"1.2.0", "1.9.0", "1.10.0", "2.0.0-beta.1"}) || p.Latest != "1.10.0" {
		t.Errorf("versions %v latest %s; want semver order and the newest stable as latest", p.Versions, p.Latest)
	}
	if p.Description != "now" || !p.UpdatedAt.Equal(at) {
		t.Errorf("package document %+v; want the catalog entry it was published with", p.Package)
	}
}

func TestIndexUpsertKeepsNameOrder(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var ix Index
	for _, n := range []string{"mitt", "axios", "zod", "mitt"} {
		ix.Upsert(IndexEntry{Name: n, Latest: n + "-latest"}, at)
	}
	var names []string
	for _, e := range ix.Libraries {
		names = append(names, e.Name)
	}
	if !slices.Equal(names, []string{"axios", "mitt", "zod"}) || !ix.UpdatedAt.Equal(at) {
		t.Errorf("index %v", names)
	}
	p := &Package{Package: catalog.Package{Name: "mitt", Filename: "mitt.min.js", License: "MIT"}, Latest: "3.0.1"}
	v := &Version{Files: []File{{Path: "mitt.js", SRI: "sha512-a"}, {Path: "mitt.min.js", SRI: "sha512-b"}}}
	if e := EntryOf(p, v); e.SRI != "sha512-b" || e.Latest != "3.0.1" || e.License != "MIT" {
		t.Errorf("entry %+v; want the SRI of the default file", e)
	}
	if e := EntryOf(p, nil); e.SRI != "" || e.Name != "mitt" {
		t.Errorf("entry without a version document %+v", e)
	}
}

func TestRejectionHolds(t *testing.T) {
	inRelease := Rejection{Type: "BadArchive"}
	bySelection := Rejection{Type: "NoFilesSelected", Selection: "aaaa"}
	if !inRelease.Holds("bbbb") || !bySelection.Holds("aaaa") || bySelection.Holds("bbbb") {
		t.Error("a rejection for the release holds always; one for the fileMap only while the fileMap is unchanged")
	}
}

// TestIndexPutHonoursExcludeFromSearch: a library the catalog keeps out of
// search (cdnjs's autoupdate.excludeFromSearch) leaves the index, and
// comes back when the flag is dropped.
func TestIndexPutHonoursExcludeFromSearch(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var ix Index
	font := &Package{Package: catalog.Package{Name: "fontsource-abel"}, Latest: "5.0.0"}
	ix.Put(font, nil, at)
	ix.Put(&Package{Package: catalog.Package{Name: "mitt"}, Latest: "3.0.1"}, nil, at)
	if len(ix.Libraries) != 2 {
		t.Fatalf("index %v", ix.Libraries)
	}
	font.Autoupdate.ExcludeFromSearch = true
	if !ix.Put(font, nil, at) || len(ix.Libraries) != 1 || ix.Libraries[0].Name != "mitt" {
		t.Errorf("excluded library still indexed: %v", ix.Libraries)
	}
	if ix.Put(font, nil, at) {
		t.Error("removing an absent entry reported a change")
	}
}
