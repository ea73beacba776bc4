// Package plan holds the publish pipeline's logic, free of Temporal and of
// I/O: planning which files of a version must be processed and which reuse
// outputs stored by an earlier version, packing work into batches, and
// assembling the version document from the results.
package plan

import (
	"fmt"
	"sort"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// SourceFile is one file selected from a release by the fileMap.
type SourceFile struct {
	Path string // output path, '/'-separated
	Size int64
	SRI  string // sha512 of the content: the content's identity
}

// FileResult is what processing one source file produced and stored.
type FileResult struct {
	File metadata.File  `json:"file"`
	Twin *metadata.File `json:"twin,omitempty"` // generated minified twin
	// TwinWanted records whether a twin was asked for, so a stored result is
	// only reused where the same twin decision holds.
	TwinWanted bool   `json:"twinWanted,omitempty"`
	Warning    string `json:"warning,omitempty"`
}

// ReuseEntry points at outputs an earlier version stored for some content
// at a path of some class.
type ReuseEntry struct {
	Version     string     `json:"version"`
	Fingerprint string     `json:"fingerprint"`
	Result      FileResult `json:"result"`
}

// ReuseIndex maps content and path class (ReuseKey) to where its outputs
// are stored; one document per package, updated by every publish.
type ReuseIndex struct {
	Entries map[string]ReuseEntry `json:"entries"`
}

// Classifier names what about a path, besides its content, decides the
// outputs (content type, compression, minifier): process.Class.
type Classifier func(path string) string

// ReuseKey is the index key of some content at a path of some class.
func ReuseKey(sri, class string) string {
	if class == "" {
		return sri
	}
	return sri + " " + class
}

// Add records the results of a published version, keeping existing entries
// with the same fingerprint (their objects stay where they were first stored).
func (ix *ReuseIndex) Add(version, fingerprint string, results []FileResult, class Classifier) (changed bool) {
	if ix.Entries == nil {
		ix.Entries = map[string]ReuseEntry{}
	}
	for _, r := range results {
		key := ReuseKey(r.File.SRI, class(r.File.Path))
		old, ok := ix.Entries[key]
		if ok && old.Fingerprint == fingerprint && old.Result.TwinWanted == r.TwinWanted {
			continue
		}
		ix.Entries[key] = ReuseEntry{Version: version, Fingerprint: fingerprint, Result: r}
		changed = true
	}
	return changed
}

// PlanEntry says how one source file gets its outputs.
type PlanEntry struct {
	SourceFile
	TwinWanted bool `json:"twinWanted,omitempty"`
	// Batch is the processing batch, or -1 when the file is not processed.
	Batch int `json:"batch"`
	// Reuse, when set, holds outputs stored by an earlier version: copied.
	Reuse *ReuseEntry `json:"reuse,omitempty"`
	// SameAs, when set, is a path of this version with identical content whose
	// outputs are copied once they exist.
	SameAs string `json:"sameAs,omitempty"`
}

// Plan is a version's work list, kept in the bucket (it can hold 100,000
// entries), never in workflow history.
type Plan struct {
	Name        string      `json:"name"`
	Version     string      `json:"version"`
	Fingerprint string      `json:"fingerprint"`
	Entries     []PlanEntry `json:"entries"` // sorted by Path
	Batches     int         `json:"batches"`
	Skipped     []Skip      `json:"skipped,omitempty"`
	// NotProcessed are selected files whose processing was skipped (over
	// the library's size limit: stored as is; too large to minify), with
	// why: the version document lists them.
	NotProcessed []metadata.SkippedFile `json:"notProcessed,omitempty"`
	// Package is the catalog entry the version was planned with; publishing
	// writes these fields into the package document.
	Package catalog.Package `json:"package"`
}

// Skip is a file left out of a release, with why.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// BatchLimits bound one processing batch. Batches are sized by bytes so the
// CPU work per batch is even, and by count so result documents stay small.
type BatchLimits struct {
	MaxBytes int64
	MaxFiles int
}

// OwnBatchBytes is the size above which a file is processed streamed,
// never whole in memory: each such file gets a batch of its own, whatever
// the limits, so the compress pool reads it from the batch to disk and
// one batch holds at most one file that large. It is
// transform.MaxMinifySize: the files processed in memory are those that
// may get a minified twin.
const OwnBatchBytes = 16 << 20

// DefaultBatchLimits keep a 20 MB release at about 20 batches (enough to keep
// every core of a compress pool busy) and a 100,000-file release well under
// Temporal's 2,000 pending children at a time.
var DefaultBatchLimits = BatchLimits{MaxBytes: 1 << 20, MaxFiles: 200}

// TwinDecider says whether a source path should get a generated minified twin.
type TwinDecider func(path string) bool

// BuildPlan decides, for each source file, whether its outputs come from an
// earlier version (same content and fingerprint), from another path of this
// version with the same content, or from processing, and packs the files to
// process into batches; a file over OwnBatchBytes gets a batch of its own.
func BuildPlan(name, version, fingerprint string, files []SourceFile, reuse *ReuseIndex, twin TwinDecider, class Classifier, limits BatchLimits) *Plan {
	if limits.MaxBytes <= 0 || limits.MaxFiles <= 0 {
		limits = DefaultBatchLimits
	}
	sorted := append([]SourceFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	p := &Plan{Name: name, Version: version, Fingerprint: fingerprint, Entries: make([]PlanEntry, 0, len(sorted))}
	firstPathOf := map[string]string{} // content+class+twin decision → path processed in this version
	var toProcess []int
	for _, f := range sorted {
		e := PlanEntry{SourceFile: f, TwinWanted: twin(f.Path), Batch: -1}
		key := ReuseKey(f.SRI, class(f.Path))
		sameKey := fmt.Sprintf("%s twin=%t", key, e.TwinWanted)
		if r, ok := reuse.lookup(name, key, fingerprint, e.TwinWanted); ok {
			e.Reuse = &r
		} else if first, ok := firstPathOf[sameKey]; ok {
			e.SameAs = first
		} else {
			// Another path reads this one's bytes (storedAt) only when its
			// key is one a storedAt may name.
			if metadata.CheckStoredAt(name, metadata.FileKey(name, version, f.Path)) == nil {
				firstPathOf[sameKey] = f.Path
			}
			toProcess = append(toProcess, len(p.Entries))
		}
		p.Entries = append(p.Entries, e)
	}
	// Largest first, each into the batch that is currently smallest: even
	// batches without knowing how fast each file compresses.
	sort.SliceStable(toProcess, func(a, b int) bool { return p.Entries[toProcess[a]].Size > p.Entries[toProcess[b]].Size })
	var own []int
	for len(toProcess) > 0 && p.Entries[toProcess[0]].Size > OwnBatchBytes {
		own, toProcess = append(own, toProcess[0]), toProcess[1:]
	}
	defer func() {
		for _, i := range own {
			p.Entries[i].Batch = p.Batches
			p.Batches++
		}
	}()
	var total int64
	for _, i := range toProcess {
		total += p.Entries[i].Size
	}
	n := int((total + limits.MaxBytes - 1) / limits.MaxBytes)
	if byCount := (len(toProcess) + limits.MaxFiles - 1) / limits.MaxFiles; byCount > n {
		n = byCount
	}
	if n == 0 && len(toProcess) > 0 {
		n = 1
	}
	if len(toProcess) < n {
		n = len(toProcess)
	}
	p.Batches = n
	if n == 0 {
		return p
	}
	bytes := make([]int64, n)
	counts := make([]int, n)
	for _, i := range toProcess {
		best := -1
		for b := 0; b < n; b++ {
			if counts[b] >= limits.MaxFiles {
				continue
			}
			// Ties go to the batch with fewer files, so empty files
			// spread out and no batch is left without work.
			if best < 0 || bytes[b] < bytes[best] || (bytes[b] == bytes[best] && counts[b] < counts[best]) {
				best = b
			}
		}
		p.Entries[i].Batch = best
		bytes[best] += p.Entries[i].Size
		counts[best]++
	}
	return p
}

// lookup finds stored outputs to reuse for package name. An entry whose
// bytes are kept outside the package's own tree is never reused (the file
// is processed afresh): the index is a document in a bucket.
func (ix *ReuseIndex) lookup(name, key, fingerprint string, twinWanted bool) (ReuseEntry, bool) {
	if ix == nil {
		return ReuseEntry{}, false
	}
	e, ok := ix.Entries[key]
	if !ok || e.Fingerprint != fingerprint || e.Result.TwinWanted != twinWanted {
		return ReuseEntry{}, false
	}
	if _, err := storedAtOf(e.Result.File, name, e.Version); err != nil {
		return ReuseEntry{}, false
	}
	if e.Result.Twin != nil {
		if _, err := storedAtOf(*e.Result.Twin, name, e.Version); err != nil {
			return ReuseEntry{}, false
		}
	}
	return e, true
}

// BatchEntries returns the entries of one batch, in path order.
func (p *Plan) BatchEntries(batch int) []PlanEntry {
	var out []PlanEntry
	for _, e := range p.Entries {
		if e.Batch == batch {
			out = append(out, e)
		}
	}
	return out
}

// Counts summarises a plan.
func (p *Plan) Counts() (process, reuse, same int) {
	for _, e := range p.Entries {
		switch {
		case e.Reuse != nil:
			reuse++
		case e.SameAs != "":
			same++
		default:
			process++
		}
	}
	return
}
