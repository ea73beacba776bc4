package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// Auditor audits and repairs published packages on both stores.
type Auditor struct {
	Primary, Mirror objectstore.Store
	Buckets         metadata.Buckets
	// Parallel bounds the files audited at once; 0 means 16.
	Parallel int
	// CPU runs hashing, decoding and re-processing within the caller's CPU
	// bound (the compress pool's limiter); nil runs them at once.
	CPU func(ctx context.Context, fn func()) error
	// Original opens the original release archive of a version as it was
	// published (verified against its registry's integrity when it was
	// fetched), or returns nil, nil when none is kept. Nil: no originals.
	Original func(ctx context.Context, name, version string) (io.ReadCloser, error)
	TempDir  string           // scratch space for extracting an original
	Now      func() time.Time // document timestamps; time.Now when nil
}

// side is one store's buckets.
type side struct {
	name        string
	store       objectstore.Store
	files, meta string
}

func (a *Auditor) sides() [2]side {
	return [2]side{
		{StorePrimary, a.Primary, a.Buckets.Files, a.Buckets.Meta},
		{StoreMirror, a.Mirror, a.Buckets.Mirror, a.Buckets.MirrorMeta},
	}
}

func (a *Auditor) parallel() int {
	if a.Parallel > 0 {
		return a.Parallel
	}
	return 16
}

func (a *Auditor) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now().UTC()
}

func (a *Auditor) cpu(ctx context.Context, fn func()) error {
	if a.CPU == nil {
		fn()
		return nil
	}
	return a.CPU(ctx, fn)
}

// read returns an object's bytes; found is false when it is missing.
func read(ctx context.Context, s objectstore.Store, bucket, key string) (data []byte, found bool, err error) {
	data, _, err = objectstore.ReadAll(ctx, s, bucket, key)
	if errors.Is(err, objectstore.ErrNotFound) {
		return nil, false, nil
	}
	return data, err == nil, err
}

func write(ctx context.Context, s objectstore.Store, bucket, key string, data []byte, contentType string) error {
	return objectstore.PutBytes(ctx, s, bucket, key, data, objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: contentType}})
}

// Package audits every version the package document lists, on both
// stores, and the package's documents and search entry; with o.Repair it
// repairs what it can. Problems come back in version, file and store order.
func (a *Auditor) Package(ctx context.Context, name string, o Options) (*Report, error) {
	rep := &Report{Package: name}
	valid := func(b []byte) bool {
		var d metadata.Package
		return json.Unmarshal(b, &d) == nil && d.Name == name
	}
	raw, err := a.document(ctx, metadata.PackageKey(name), valid, o, rep,
		func(store, detail string) Problem {
			return Problem{Package: name, Store: store, Kind: KindPackageDocument, Detail: detail}
		})
	if err != nil || raw == nil {
		return rep, err
	}
	var pkg metadata.Package
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return rep, err
	}
	rep.Versions = len(pkg.Versions)
	var broken []string
	for _, v := range pkg.Versions {
		ok, err := a.version(ctx, &pkg, v, o, rep)
		if err != nil {
			return rep, err
		}
		if !ok {
			broken = append(broken, v)
		}
	}
	if o.WithdrawBroken && len(broken) > 0 {
		if err := a.withdraw(ctx, name, broken, rep); err != nil {
			return rep, err
		}
		if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(name), &pkg); err != nil {
			return rep, err
		}
		// The entry names the latest version, which may be gone now.
		if len(pkg.Versions) > 0 && !pkg.Autoupdate.ExcludeFromSearch {
			if err := a.putIndexEntry(ctx, name); err != nil {
				return rep, err
			}
			if err := objectstore.Replicate(ctx, a.Primary, a.Buckets.Meta, a.Mirror, a.Buckets.MirrorMeta,
				metadata.SearchShardKey(metadata.SearchShardOf(name))); err != nil {
				return rep, err
			}
		}
	}
	return rep, a.searchIndex(ctx, &pkg, o, rep)
}

// document checks one metadata document the edge reads against the
// primary's copy, the only reference for what is published: the mirror's
// must be byte for byte the primary's, and is repaired from it. A document
// the primary lacks, or holds unreadable, is reported and never taken from
// the mirror: whoever can write to the mirror's bucket could otherwise say
// what the primary publishes. It returns the primary's bytes, nil when the
// primary has no valid copy.
func (a *Auditor) document(ctx context.Context, key string, valid func([]byte) bool, o Options, rep *Report, problem func(store, detail string) Problem) ([]byte, error) {
	primary, found, err := read(ctx, a.Primary, a.Buckets.Meta, key)
	if err != nil {
		return nil, err
	}
	mirror, mirrorFound, err := read(ctx, a.Mirror, a.Buckets.MirrorMeta, key)
	if err != nil {
		return nil, err
	}
	if !found || !valid(primary) {
		detail := "missing"
		if found {
			detail = "unreadable"
		}
		if mirrorFound {
			detail += "; the mirror holds a copy, never taken as the reference"
		}
		p := problem(StorePrimary, detail)
		p.Reason = reasonNoPrimaryDocument
		rep.add(p)
		return nil, nil
	}
	if mirrorFound && bytes.Equal(mirror, primary) {
		return primary, nil
	}
	detail := "missing"
	if mirrorFound {
		detail = "differs from the primary's"
	}
	p := problem(StoreMirror, detail)
	if err := a.repairWith(ctx, &p, o, func() error {
		return write(ctx, a.Mirror, a.Buckets.MirrorMeta, key, primary, "application/json")
	}); err != nil {
		return nil, err
	}
	rep.add(p)
	return primary, nil
}

// repairWith runs fix when repair is on and records the outcome.
func (a *Auditor) repairWith(ctx context.Context, p *Problem, o Options, fix func() error) error {
	if !o.Repair {
		p.Reason = "repair is off"
		return nil
	}
	if err := fix(); err != nil {
		return err
	}
	p.Repaired = true
	return nil
}

// version audits one listed version; ok is false when a problem of it is
// left unrepaired.
func (a *Auditor) version(ctx context.Context, pkg *metadata.Package, version string, o Options, rep *Report) (ok bool, err error) {
	name := pkg.Name
	valid := func(b []byte) bool {
		var d metadata.Version
		return json.Unmarshal(b, &d) == nil && d.Name == name && d.Version == version
	}
	var found Report
	defer func() {
		sort.SliceStable(found.Problems, func(i, j int) bool {
			x, y := found.Problems[i], found.Problems[j]
			if x.File != y.File {
				return x.File < y.File
			}
			return x.Store < y.Store
		})
		rep.Checked += found.Checked
		for _, p := range found.Problems {
			rep.add(p)
		}
		ok = found.Unrepaired == 0
	}()
	raw, err := a.document(ctx, metadata.VersionKey(name, version), valid, o, &found,
		func(store, detail string) Problem {
			return Problem{Package: name, Version: version, Store: store, Kind: KindVersionDocument, Detail: detail}
		})
	if err != nil || raw == nil {
		return false, err
	}
	var doc metadata.Version
	if err := json.Unmarshal(raw, &doc); err != nil {
		return false, err
	}
	// Materialize has not yet copied a reused file to the version's own
	// keys while the package document lists the version as incomplete.
	materialized := !slices.Contains(pkg.Incomplete, version)
	var mu sync.Mutex
	var pending []*fileAudit
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.parallel())
	for _, f := range doc.Files {
		if !Sampled(o.Seed, metadata.FileKey(name, version, f.Path), o.SamplePercent) {
			continue
		}
		g.Go(func() error {
			fa := newFileAudit(name, version, f, materialized)
			if err := a.checkFile(gctx, fa); err != nil {
				return err
			}
			if o.Repair {
				if err := a.repairFromStores(gctx, fa); err != nil {
					return err
				}
			}
			if o.Progress != nil {
				o.Progress()
			}
			mu.Lock()
			defer mu.Unlock()
			found.Checked++
			if fa.needsOriginal() {
				pending = append(pending, fa)
				return nil
			}
			fa.report(&found, o)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return false, err
	}
	if len(pending) > 0 {
		reason := "repair is off"
		if o.Repair {
			if reason, err = a.repairFromOriginal(ctx, pkg, version, pending); err != nil {
				return false, err
			}
		}
		for _, fa := range pending {
			fa.unrepairable = reason
			fa.report(&found, o)
		}
		if reason == reasonNoCopy && a.Original != nil && found.Unrepaired > 0 {
			rep.NeedOriginals = append(rep.NeedOriginals, version)
		}
	}
	return
}
