package tarx

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExtractDeepAndLongPathsNeverReachTheDisk: a path 4,000 folders deep,
// one over the key limit, a name over 255 bytes and a non-UTF-8 name are
// skipped as unpublishable names before anything is written, so their
// cost is that of reading their headers.
func TestExtractDeepAndLongPathsNeverReachTheDisk(t *testing.T) {
	deep := "package/" + strings.Repeat("d/", 4000) + "x.js"
	long := "package/" + strings.Repeat("a", 600) + "/" + strings.Repeat("b", 250) + "/" + strings.Repeat("c", 250) + ".js"
	longName := "package/" + strings.Repeat("n", 300) + ".js"
	notUTF8 := "package/bad\xff.js"
	data := tarball(t, true, file(deep, "x"), file(long, "x"), file(longName, "x"), file(notUTF8, "x"), file("package/ok.js", "ok"))
	dest := t.TempDir()
	res, err := Extract(bytes.NewReader(data), dest, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 1 || res.Files[0].Path != "ok.js" {
		t.Errorf("files %v, want ok.js alone", res.Files)
	}
	if len(res.Skipped) != 4 {
		t.Fatalf("skipped %v, want the four bad names", res.Skipped)
	}
	for _, s := range res.Skipped {
		if !s.BadName {
			t.Errorf("%.40s… skipped (%s) but not marked as a bad name", s.Path, s.Reason)
		}
	}
	entries, _ := os.ReadDir(dest)
	if len(entries) != 1 {
		t.Errorf("the destination holds %d entries, want ok.js alone", len(entries))
	}
}

// TestExtractDirectoriesCountAgainstMaxFiles: an archive cannot create
// unbounded folders with few files.
func TestExtractDirectoriesCountAgainstMaxFiles(t *testing.T) {
	var entries []tarEntry
	for i := range 10 {
		entries = append(entries, file("package/"+strings.Repeat(string(rune('a'+i))+"/", 20)+"x.js", "x"))
	}
	_, err := Extract(bytes.NewReader(tarball(t, true, entries...)), t.TempDir(), Limits{MaxFiles: 100})
	var limit *LimitError
	if !errors.As(err, &limit) || limit.Limit != "MaxFiles" {
		t.Errorf("10 files in 200 folders under MaxFiles 100: %v", err)
	}
}

// TestExtractContextStopsAndReports: a cancelled extraction stops with the
// context's error, and progress is reported entry by entry.
func TestExtractContextStopsAndReports(t *testing.T) {
	data := tarball(t, true, file("package/a.js", "a"), file("package/b.js", strings.Repeat("b", 100_000)), file("package/c.js", "c"))
	var seen []Progress
	ctx, cancel := context.WithCancel(context.Background())
	_, err := ExtractContext(ctx, bytes.NewReader(data), t.TempDir(), Limits{}, func(p Progress) {
		seen = append(seen, p)
		if p.Entries == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled extraction: %v", err)
	}
	if len(seen) != 2 || seen[1].Bytes <= seen[0].Bytes || seen[1].Bytes < 100_000 {
		t.Errorf("progress %v, want two reports with growing byte counts", seen)
	}
	if _, err := os.Stat(filepath.Join(t.TempDir(), "c.js")); err == nil {
		t.Error("c.js extracted after the cancel")
	}
}
