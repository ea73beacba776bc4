package migrate

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
)

// A key a spreadsheet would run as a formula is written with a leading
// quote in the CSV report; JSON lines keep it exactly.
func TestCSVReportEscapesFormulas(t *testing.T) {
	keys := map[string]string{
		"=HYPERLINK(\"http://x\")": "'=HYPERLINK(\"http://x\")",
		"+1.js":                    "'+1.js",
		"-2.js":                    "'-2.js",
		"@SUM(A1).js":              "'@SUM(A1).js",
		"\tlead-tab":               "'\tlead-tab",
		"\rlead-cr":                "'\rlead-cr",
		"plain/a=b+c.js":           "plain/a=b+c.js",
		"'quoted":                  "'quoted",
	}
	var buf bytes.Buffer
	w, err := NewReportWriter(&buf, FormatCSV)
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys {
		if err := w.Write(ObjectResult{Key: k, Status: StatusFailed, Error: "-1 bytes", Reason: "=cmd"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(buf.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(keys)+1 {
		t.Fatalf("%d rows, want %d", len(rows), len(keys)+1)
	}
	seen := map[string]bool{}
	for _, row := range rows[1:] {
		seen[row[0]] = true
		if row[3] != "'-1 bytes" || row[4] != "'=cmd" {
			t.Errorf("error %q reason %q: want both quoted", row[3], row[4])
		}
	}
	for k, want := range keys {
		if !seen[want] {
			t.Errorf("key %q: no row %q in\n%s", k, want, buf.String())
		}
	}

	buf.Reset()
	w, _ = NewReportWriter(&buf, FormatJSONLines)
	_ = w.Write(ObjectResult{Key: "=1+1", Status: StatusCopied})
	_ = w.Close()
	if !strings.Contains(buf.String(), `"key":"=1+1"`) {
		t.Errorf("JSON lines changed the key: %s", buf.String())
	}
}
