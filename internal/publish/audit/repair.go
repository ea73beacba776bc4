package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/fileset"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/tarx"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
)

// Why a wrong copy stays wrong.
const (
	reasonNoCopy    = "no good copy: neither store holds the recorded bytes and no original release is kept"
	reasonReprocess = "no good copy: neither store holds the recorded bytes and the original release, re-processed, gives other bytes"
	// Only the primary's documents say what is published: a mirror
	// writer must not.
	reasonNoPrimaryDocument = "the primary has no valid copy, and the mirror's is never taken for it: publish the version again or restore the primary's document"
	reasonStoredAtRefused   = "refused: never read or written, since a version may point only into its own package's tree; publish the version again"
)

// repairFromOriginal re-processes the version's original release and
// writes each pending file whose output has exactly its recorded SRI and
// size; it returns the reason left for the others.
func (a *Auditor) repairFromOriginal(ctx context.Context, pkg *metadata.Package, version string, pending []*fileAudit) (string, error) {
	if a.Original == nil {
		return reasonNoCopy, nil
	}
	want := map[string]bool{}
	for _, fa := range pending {
		want[fa.f.Path] = true
	}
	outs, reason, err := a.reprocess(ctx, pkg, version, want)
	if err != nil || reason != "" {
		return reason, err
	}
	for _, fa := range pending {
		data, ok := outs[fa.f.Path]
		if !ok || !Right(fa.f, data) {
			continue // never written: a published SRI never changes
		}
		fa.good = data
		if err := a.repairFromStores(ctx, fa); err != nil {
			return "", err
		}
	}
	return reasonReprocess, nil
}

// reprocess extracts the original release, selects files as its fileMap
// does and processes those that give the wanted paths (an original, or the
// source of a minified twin). A release that cannot be read so is a reason,
// not an error: the files stay unrepaired.
func (a *Auditor) reprocess(ctx context.Context, pkg *metadata.Package, version string, want map[string]bool) (map[string][]byte, string, error) {
	rc, err := a.Original(ctx, pkg.Name, version)
	if err != nil || rc == nil {
		return nil, reasonNoCopy, err
	}
	defer rc.Close()
	tmp, err := os.MkdirTemp(a.TempDir, "audit-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "files")
	extracted, err := tarx.ExtractContext(ctx, rc, root, tarx.DefaultLimits, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, fmt.Sprintf("no good copy: the original release cannot be extracted: %v", err), nil
	}
	paths := make([]string, len(extracted.Files))
	for i, e := range extracted.Files {
		paths[i] = e.Path
	}
	selected, err := fileset.ApplyContext(ctx, pkg.Autoupdate.FileMap, paths)
	if err != nil {
		return nil, fmt.Sprintf("no good copy: the fileMap selects nothing from the original release: %v", err), nil
	}
	shipped := map[string]bool{}
	for _, s := range selected {
		shipped[s.Output] = true
	}
	opts := transform.Options{MinifyJS: pkg.MinifyJS(), MinifyCSS: pkg.MinifyCSS(), MaxFileSize: pkg.FileSizeLimit()}
	out := map[string][]byte{}
	for _, s := range selected {
		twin, hasTwin := transform.MinifiedPath(s.Output)
		if !want[s.Output] && !(hasTwin && want[twin]) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(s.Source)))
		if err != nil {
			return nil, "", err
		}
		var outputs []transform.Output
		var perr error
		if err := a.cpu(ctx, func() {
			outputs, _, perr = transform.File(s.Output, data, opts, func(p string) bool { return shipped[p] })
		}); err != nil {
			return nil, "", err
		}
		if perr != nil {
			continue
		}
		for _, o := range outputs {
			if want[o.Path] {
				out[o.Path] = o.Data
			}
		}
	}
	return out, "", nil
}

// searchIndex checks that the search index lists the package on both
// stores (unless the catalog keeps it out of search); a repair puts its
// entry back on the primary and copies the shard to the mirror, as a
// commit does.
func (a *Auditor) searchIndex(ctx context.Context, pkg *metadata.Package, o Options, rep *Report) error {
	if pkg.Autoupdate.ExcludeFromSearch || len(pkg.Versions) == 0 {
		return nil
	}
	key := metadata.SearchShardKey(metadata.SearchShardOf(pkg.Name))
	var problems []Problem
	for _, s := range a.sides() {
		var ix metadata.Index
		if _, err := objectstore.GetJSON(ctx, s.store, s.meta, key, &ix); err != nil && !errors.Is(err, objectstore.ErrNotFound) {
			return err
		}
		if !slices.ContainsFunc(ix.Libraries, func(e metadata.IndexEntry) bool { return e.Name == pkg.Name }) {
			problems = append(problems, Problem{Package: pkg.Name, Store: s.name, Kind: KindSearchIndex, Detail: "the search index does not list the package"})
		}
	}
	if len(problems) == 0 {
		return nil
	}
	fix := func() error {
		if problems[0].Store == StorePrimary {
			if err := a.putIndexEntry(ctx, pkg.Name); err != nil {
				return err
			}
		}
		return objectstore.Replicate(ctx, a.Primary, a.Buckets.Meta, a.Mirror, a.Buckets.MirrorMeta, key)
	}
	if err := a.repairWith(ctx, &problems[0], o, fix); err != nil {
		return err
	}
	for _, p := range problems {
		p.Repaired, p.Reason = problems[0].Repaired, problems[0].Reason
		rep.add(p)
	}
	return nil
}

// putIndexEntry writes the package's entry into its shard from the package
// document as the primary holds it.
func (a *Auditor) putIndexEntry(ctx context.Context, name string) error {
	return metadata.PutSearchEntry(ctx, a.Primary, a.Buckets.Meta, name, a.now())
}

// withdraw takes broken versions out of the package document on the
// primary, copies it to the mirror, and marks their problems.
func (a *Auditor) withdraw(ctx context.Context, name string, broken []string, rep *Report) error {
	if _, err := objectstore.UpdateJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(name),
		func(d *metadata.Package, found bool) (bool, error) {
			changed := false
			for _, v := range broken {
				changed = d.Withdraw(v, a.now()) || changed
			}
			return found && changed, nil
		}); err != nil {
		return err
	}
	if err := objectstore.Replicate(ctx, a.Primary, a.Buckets.Meta, a.Mirror, a.Buckets.MirrorMeta, metadata.PackageKey(name)); err != nil {
		return err
	}
	rep.Withdrawn = append(rep.Withdrawn, broken...)
	for i := range rep.Problems {
		if p := &rep.Problems[i]; !p.Repaired && slices.Contains(broken, p.Version) {
			p.Withdrawn = true
		}
	}
	return nil
}
