package plan

import (
	"slices"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// A release may ship files whose paths are the keys of another file's
// generated representations: x.js beside x.js.gz or x.js.br. Both would be
// written to one key, and the edge would then serve one file's bytes with
// the other's size and hash. The shipped file always wins: the generated
// representation is not written, and its file is served in the other
// encodings (or as it is).

// Occupied is every path a version publishes: its files and the minified
// twins they get.
func Occupied(p *Plan, twinPath TwinPath) map[string]bool {
	occupied := make(map[string]bool, len(p.Entries))
	for _, e := range p.Entries {
		occupied[e.Path] = true
		if e.TwinWanted {
			if tp, ok := twinPath(e.Path); ok {
				occupied[tp] = true
			}
		}
	}
	return occupied
}

// Blocked lists the generated representations of path (and of its twin,
// when it gets one) that would land on a path the version publishes.
func Blocked(path string, twinWanted bool, occupied map[string]bool, twinPath TwinPath) []string {
	var blocked []string
	outputs := []string{path}
	if twinWanted {
		if tp, ok := twinPath(path); ok {
			outputs = append(outputs, tp)
		}
	}
	for _, o := range outputs {
		for _, suffix := range []string{metadata.BrotliSuffix, metadata.GzipSuffix} {
			if occupied[o+suffix] {
				blocked = append(blocked, o+suffix)
			}
		}
	}
	return blocked
}

// dropBlocked removes from a's results and copies every representation
// that lands on a path the version publishes: such a file keeps its own
// bytes, and its namesake is served in its other encodings.
func dropBlocked(a *Assembly, name, version string) {
	occupied := map[string]bool{}
	own := map[CopyOp]bool{} // copies that bring a file itself to its key
	for _, r := range a.Results {
		for _, f := range []*metadata.File{&r.File, r.Twin} {
			if f == nil {
				continue
			}
			occupied[f.Path] = true
			if f.StoredAt != "" {
				own[CopyOp{f.StoredAt, metadata.FileKey(name, version, f.Path)}] = true
			}
		}
	}
	drop := map[CopyOp]bool{}
	clear := func(f *metadata.File) {
		for _, rep := range []struct {
			suffix string
			size   *int64
		}{{metadata.BrotliSuffix, &f.BrotliSize}, {metadata.GzipSuffix, &f.GzipSize}} {
			if *rep.size == 0 || !occupied[f.Path+rep.suffix] {
				continue
			}
			*rep.size = 0
			if f.StoredAt != "" {
				drop[CopyOp{f.StoredAt + rep.suffix, metadata.FileKey(name, version, f.Path) + rep.suffix}] = true
			}
		}
	}
	for i := range a.Results {
		clear(&a.Results[i].File)
		if a.Results[i].Twin != nil {
			twin := *a.Results[i].Twin
			clear(&twin)
			a.Results[i].Twin = &twin
		}
	}
	if len(drop) > 0 {
		a.Copies = slices.DeleteFunc(a.Copies, func(c CopyOp) bool { return drop[c] && !own[c] })
	}
}
