package web

import (
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
)

// A library's page lists a published version's skipped files with why.
func TestLibraryPageListsSkippedFiles(t *testing.T) {
	d := pubclient.LibraryDetail{Library: pubclient.Library{Name: "big", State: pubclient.StatePublished},
		Versions: []pubclient.Version{{Version: "1.0.0", State: pubclient.StatePublished, Skipped: []metadata.SkippedFile{
			{Path: "dist/app.js.map", Size: 600 << 20, Reason: "over the library's size limit (512 MiB): stored as is, without a minified twin, brotli or gzip"}}}}}
	var out strings.Builder
	v := view{Title: "big", User: "ada", Content: libraryView{LibraryDetail: d, Runs: map[string]string{}}}
	if err := parsePages()["library"].ExecuteTemplate(&out, "layout", v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 file skipped", "<code>dist/app.js.map</code> (629145600 bytes): over the library&#39;s size limit (512 MiB): stored as is"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
