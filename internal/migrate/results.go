package migrate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// The outcome of one object.
const (
	StatusCopied    = "copied"
	StatusSkipped   = "skipped"
	StatusFailed    = "failed"
	StatusWouldCopy = "would-copy" // a dry run
)

// What --verify found for a copied object.
const (
	VerifyMatch    = "match"
	VerifyMismatch = "mismatch"
)

// ObjectResult is what happened to one object: a line of the job's report.
type ObjectResult struct {
	Key    string `json:"key"`
	Status string `json:"status"`
	Bytes  int64  `json:"bytes"`
	Error  string `json:"error,omitempty"`
	// Reason says why the object was copied or skipped.
	Reason   string `json:"reason,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
	// Verify is match or mismatch after --verify; VerifyDetail says why.
	Verify       string `json:"verify,omitempty"`
	VerifyDetail string `json:"verifyDetail,omitempty"`
	// Throttled counts the SlowDown answers this object waited out.
	Throttled int `json:"throttled,omitempty"`
}

// DeadLetter is an object that still failed after its retries: what
// `migrate redrive` tries again.
type DeadLetter struct {
	Object
	Error    string `json:"error"`
	Attempts int    `json:"attempts"`
}

// Page is one listing page of a job: the objects a page worker copies.
type Page struct {
	Seq     int      `json:"seq"`
	Objects []Object `json:"objects"`
	// Bounded (a sync's page): the page also answers for the destination
	// keys from After (exclusive; "" from the first) to its last object,
	// or, Final, to Until ("" to the end): see SpanOf.
	Bounded bool   `json:"bounded,omitempty"`
	After   string `json:"after,omitempty"`
	Until   string `json:"until,omitempty"`
	Final   bool   `json:"final,omitempty"`
	// Excluded (a bounded page) are the source keys of its listing that the
	// job's filters left out: they are at the source, so their copies at
	// the destination are never extraneous.
	Excluded []string `json:"excluded,omitempty"`
}

// LastListed is the page's last listed key, whether the filters kept it or
// not ("" for an empty page): its span reaches there.
func (p Page) LastListed() string {
	last := ""
	if n := len(p.Objects); n > 0 {
		last = p.Objects[n-1].Key
	}
	if n := len(p.Excluded); n > 0 && p.Excluded[n-1] > last {
		last = p.Excluded[n-1]
	}
	return last
}

// WriteJSONLines writes each value as one line of JSON.
func WriteJSONLines[T any](w io.Writer, items []T) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadJSONLines reads what WriteJSONLines wrote, calling fn for each value.
// A malformed line is an error naming its number.
func ReadJSONLines[T any](r io.Reader, fn func(T) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	return sc.Err()
}
