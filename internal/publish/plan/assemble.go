package plan

import (
	"fmt"
	"sort"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// CopyOp copies one stored object (same key in the primary and the mirror bucket).
type CopyOp struct{ Src, Dst string }

// Assembly is everything publishing needs: every file's result, in path
// order (reused ones pointing at where their bytes are stored), and the
// copies that later give each reused output its own key in this version.
type Assembly struct {
	Results []FileResult
	Copies  []CopyOp
}

// TwinPath maps a source path to its generated twin's path.
type TwinPath func(path string) (string, bool)

// Assemble completes a plan with the results of processing (by path): reused
// and same-content entries take their outputs' descriptions from the stored
// result and get copies from where those outputs live.
func Assemble(p *Plan, processed map[string]FileResult, twinPath TwinPath) (*Assembly, error) {
	a := &Assembly{Results: make([]FileResult, 0, len(p.Entries))}
	for _, e := range p.Entries {
		switch {
		case e.Reuse != nil:
			r, copies, err := moved(e.Reuse.Result, p.Name, e.Reuse.Version, p.Version, e.Path, twinPath)
			if err != nil {
				return nil, err
			}
			a.Results = append(a.Results, r)
			a.Copies = append(a.Copies, copies...)
		case e.SameAs != "":
			src, ok := processed[e.SameAs]
			if !ok {
				return nil, fmt.Errorf("%s: no result for %s, whose content it shares", e.Path, e.SameAs)
			}
			r, copies, err := moved(src, p.Name, p.Version, p.Version, e.Path, twinPath)
			if err != nil {
				return nil, err
			}
			a.Results = append(a.Results, r)
			a.Copies = append(a.Copies, copies...)
		default:
			r, ok := processed[e.Path]
			if !ok {
				return nil, fmt.Errorf("%s: batch %d reported no result for it", e.Path, e.Batch)
			}
			a.Results = append(a.Results, r)
		}
	}
	dropBlocked(a, p.Name, p.Version)
	return a, nil
}

// moved rewrites a stored result for a new path, pointing at the stored
// bytes, and lists the copies that bring its objects to the new path.
func moved(r FileResult, name, fromVersion, toVersion, toPath string, twinPath TwinPath) (FileResult, []CopyOp, error) {
	var copies []CopyOp
	add := func(f metadata.File, dstPath string) {
		src, dst := f.Key(name, fromVersion), metadata.FileKey(name, toVersion, dstPath)
		copies = append(copies, CopyOp{src, dst})
		if f.BrotliSize > 0 {
			copies = append(copies, CopyOp{src + metadata.BrotliSuffix, dst + metadata.BrotliSuffix})
		}
		if f.GzipSize > 0 {
			copies = append(copies, CopyOp{src + metadata.GzipSuffix, dst + metadata.GzipSuffix})
		}
	}
	out := r
	out.File.Path = toPath
	storedAt, err := storedAtOf(r.File, name, fromVersion)
	if err != nil {
		return FileResult{}, nil, fmt.Errorf("%s: %w", toPath, err)
	}
	out.File.StoredAt = storedAt
	add(r.File, toPath)
	if r.Twin != nil {
		tp, ok := twinPath(toPath)
		if !ok {
			return FileResult{}, nil, fmt.Errorf("%s: stored result has a minified twin but the path takes none", toPath)
		}
		twin := *r.Twin
		twin.Path = tp
		twin.MinifiedFrom = toPath
		if twin.StoredAt, err = storedAtOf(*r.Twin, name, fromVersion); err != nil {
			return FileResult{}, nil, fmt.Errorf("%s: %w", tp, err)
		}
		out.Twin = &twin
		add(*r.Twin, tp)
	}
	return out, copies, nil
}

// storedAtOf is where a result stored by version of package name keeps its
// bytes, as a storedAt: refused (metadata.CheckStoredAt) unless inside the
// package's own tree, since the reuse index and the plan are documents in
// a bucket.
func storedAtOf(f metadata.File, name, version string) (string, error) {
	key := f.Key(name, version)
	if err := metadata.CheckStoredAt(name, key); err != nil {
		return "", err
	}
	return key, nil
}

// VersionDocument builds the version document from a complete assembly; two
// results claiming one path is an error, never a silent overwrite.
func VersionDocument(name, version, fingerprint string, a *Assembly) (*metadata.Version, error) {
	v := &metadata.Version{Name: name, Version: version, Processing: fingerprint}
	seen := map[string]bool{}
	add := func(f metadata.File) error {
		if seen[f.Path] {
			return fmt.Errorf("two files publish to %s", f.Path)
		}
		seen[f.Path] = true
		v.Files = append(v.Files, f)
		v.Stats.Bytes += f.Size
		return nil
	}
	for _, r := range a.Results {
		if err := add(r.File); err != nil {
			return nil, err
		}
		if r.Twin != nil {
			if err := add(*r.Twin); err != nil {
				return nil, err
			}
		}
		if r.Warning != "" {
			v.Stats.MinifyFailed++
		}
	}
	sort.Slice(v.Files, func(i, j int) bool { return v.Files[i].Path < v.Files[j].Path })
	v.Stats.SourceFiles = len(a.Results)
	v.Stats.Files = len(v.Files)
	return v, nil
}

// Materializations lists the copies that give every file of a committed
// version that points at stored bytes (StoredAt) its own key. A storedAt
// outside the package's own tree (metadata.CheckStoredAt) refuses them all:
// a version document must not make Materialize copy another package's
// objects.
func Materializations(v *metadata.Version) ([]CopyOp, error) {
	var copies []CopyOp
	for _, f := range v.Files {
		if f.StoredAt == "" {
			continue
		}
		if err := metadata.CheckStoredAt(v.Name, f.StoredAt); err != nil {
			return nil, fmt.Errorf("%s@%s %s: %w", v.Name, v.Version, f.Path, err)
		}
		dst := metadata.FileKey(v.Name, v.Version, f.Path)
		copies = append(copies, CopyOp{f.StoredAt, dst})
		if f.BrotliSize > 0 {
			copies = append(copies, CopyOp{f.StoredAt + metadata.BrotliSuffix, dst + metadata.BrotliSuffix})
		}
		if f.GzipSize > 0 {
			copies = append(copies, CopyOp{f.StoredAt + metadata.GzipSuffix, dst + metadata.GzipSuffix})
		}
	}
	return copies, nil
}
