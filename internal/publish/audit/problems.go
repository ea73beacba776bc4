// Package audit proves that what Publish serves is what it published, and
// repairs what is not. The primary's documents are the only reference: for
// every version its package document lists, every file its version
// document records, at the file's own key and at its storedAt, on the
// primary and on the mirror, has the recorded size and SRI and its .br/.gz
// twins decode to those bytes; the mirror's documents are the primary's;
// the search index lists the package. A repair writes only bytes whose SRI
// and size equal the primary's recorded ones — a published SRI never
// changes — taken from any copy that has them, or from the original
// release re-processed; the mirror's documents are rewritten from the
// primary's and never the other way. What has no such copy, a document the
// primary lacks, and a storedAt outside the package's own tree are
// reported as unrepairable.
package audit

import (
	"hash/fnv"

	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// Problem kinds.
const (
	// KindMissing: a listed file is not stored.
	KindMissing = "missing"
	// KindSize: a file is stored with another size than recorded (truncated).
	KindSize = "size"
	// KindSRI: a file has the recorded size but other bytes.
	KindSRI = "sri"
	// KindEncoding: a .br or .gz twin is missing or does not decode to the
	// file's recorded bytes.
	KindEncoding = "encoding"
	// KindVersionDocument: a version the package document lists has no
	// (or an unreadable, or a diverging) version document on a store.
	KindVersionDocument = "versionDocument"
	// KindPackageDocument: a store has no (or a diverging) package document.
	KindPackageDocument = "packageDocument"
	// KindSearchIndex: the search index does not list the package.
	KindSearchIndex = "searchIndex"
	// KindStoredAt: a file's storedAt names a key outside its package's
	// own tree (metadata.CheckStoredAt); it is never read or written.
	KindStoredAt = "storedAt"
)

// Kinds are every problem kind, for metrics that start at zero.
var Kinds = []string{KindMissing, KindSize, KindSRI, KindEncoding, KindVersionDocument, KindPackageDocument, KindSearchIndex, KindStoredAt}

// The stores a problem is on.
const (
	StorePrimary = "primary"
	StoreMirror  = "mirror"
)

// Problem is one thing found wrong, and what became of it: the contract's
// AuditProblem, so the activity hands the workflow what the audit found as
// it is.
type Problem = contract.AuditProblem

// Options are what one package's audit does.
type Options struct {
	// SamplePercent audits that share of files (0 or 100: all); versions'
	// documents and the search index are always checked.
	SamplePercent float64
	// Seed picks the sample: the same seed picks the same files, so a
	// retried or resumed audit checks what it set out to.
	Seed string
	// Repair writes the right bytes back from a good copy.
	Repair bool
	// WithdrawBroken takes versions with unrepaired problems out of their
	// package document, so nothing serves them.
	WithdrawBroken bool
	// Progress, when set, is told each file checked.
	Progress func()
}

// Report is what one package's audit found and did.
type Report struct {
	Package    string    `json:"package"`
	Versions   int       `json:"versions"`
	Checked    int       `json:"checked"` // files, each on both stores
	Problems   []Problem `json:"problems,omitempty"`
	Repaired   int       `json:"repaired"`
	Unrepaired int       `json:"unrepaired"`
	Withdrawn  []string  `json:"withdrawn,omitempty"`
	// NeedOriginals are versions with files only their original release
	// could repair, and none is kept: once it is fetched from the registry
	// into the incoming bucket, another audit repairs them.
	NeedOriginals []string `json:"needOriginals,omitempty"`
}

func (r *Report) add(p Problem) {
	if p.Repaired {
		r.Repaired++
	} else {
		r.Unrepaired++
	}
	r.Problems = append(r.Problems, p)
}

// Sampled reports whether key is in a percent sample picked by seed: a hash,
// so the choice is random across seeds, stable for one, and needs no state.
func Sampled(seed, key string, percent float64) bool {
	if percent <= 0 || percent >= 100 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(seed))
	h.Write([]byte{0})
	h.Write([]byte(key))
	// fnv's low bits mix poorly for near-equal keys; fold once more.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return float64(x%1_000_000) < percent*10_000
}
