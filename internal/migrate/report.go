package migrate

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Report formats.
const (
	FormatCSV       = "csv"
	FormatJSONLines = "jsonl"
)

// ReportWriter writes a job's report, one object at a time, so a report of
// any size streams in constant memory.
type ReportWriter interface {
	Write(ObjectResult) error
	// Close flushes; it does not close the underlying writer.
	Close() error
}

// NewReportWriter writes CSV (with a header row) or JSON lines to w.
func NewReportWriter(w io.Writer, format string) (ReportWriter, error) {
	switch format {
	case FormatCSV, "":
		cw := csv.NewWriter(w)
		if err := cw.Write([]string{"key", "status", "bytes", "error", "reason", "attempts", "verify"}); err != nil {
			return nil, err
		}
		return &csvReport{w: cw}, nil
	case FormatJSONLines, "json":
		return &jsonReport{enc: json.NewEncoder(w)}, nil
	}
	return nil, fmt.Errorf("report format %q: use csv or jsonl", format)
}

type csvReport struct{ w *csv.Writer }

func (r *csvReport) Write(o ObjectResult) error {
	attempts := ""
	if o.Attempts > 0 {
		attempts = strconv.Itoa(o.Attempts)
	}
	verify := o.Verify
	if o.VerifyDetail != "" {
		verify += ": " + o.VerifyDetail
	}
	return r.w.Write([]string{CSVCell(o.Key), o.Status, strconv.FormatInt(o.Bytes, 10), CSVCell(o.Error), CSVCell(o.Reason), attempts, CSVCell(verify)})
}

// CSVCell keeps a spreadsheet from running a cell as a formula: text that
// starts with =, +, -, @, a tab or a carriage return gets a leading single
// quote, as OWASP's "CSV Injection" guidance advises. Only the CSV report
// does this; its JSON lines carry keys exactly.
func CSVCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func (r *csvReport) Close() error {
	r.w.Flush()
	return r.w.Error()
}

type jsonReport struct{ enc *json.Encoder }

func (r *jsonReport) Write(o ObjectResult) error { return r.enc.Encode(o) }
func (r *jsonReport) Close() error               { return nil }
