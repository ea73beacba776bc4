package audit

import (
	"bytes"
	"context"
	"fmt"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// fileAudit is one file of a version on both stores: what is wrong, and
// the right bytes when any copy has them.
type fileAudit struct {
	pkg, version string
	f            metadata.File
	// keys are where its bytes must be on both stores, each with its twins:
	// its own key (what S3 clients read), and the storedAt of a reused file
	// (what the edge reads), when that is inside the package's own tree.
	keys     []string
	findings []finding
	// refused is why the file's storedAt is refused ("" when it is not):
	// that key is never read or written.
	refused string
	// good is the file's right bytes (SRI and size as recorded), from
	// either store or the original; twinGood the twins that decode to them.
	good         []byte
	twinGood     map[string][]byte
	unrepairable string
}

// newFileAudit lists the keys of file f of name@version to audit; a version
// not yet materialized has no own keys for its reused files yet.
func newFileAudit(name, version string, f metadata.File, materialized bool) *fileAudit {
	fa := &fileAudit{pkg: name, version: version, f: f}
	own, storedAt := metadata.FileKey(name, version, f.Path), f.StoredAt
	if storedAt == own {
		storedAt = ""
	}
	if storedAt == "" || materialized {
		fa.keys = append(fa.keys, own)
	}
	if storedAt != "" {
		if err := metadata.CheckStoredAt(name, storedAt); err != nil {
			fa.refused = err.Error()
		} else {
			fa.keys = append(fa.keys, storedAt)
		}
	}
	return fa
}

// finding is one object found wrong on one store.
type finding struct {
	side         int
	key          string // the file's key (without suffix)
	suffix       string // "" for the file itself, else .br or .gz
	kind, detail string
	fixed        bool
}

// checkFile reads the file and its twins at each of its keys on both
// stores and checks them.
func (a *Auditor) checkFile(ctx context.Context, fa *fileAudit) error {
	for _, key := range fa.keys {
		for i, s := range a.sides() {
			if err := a.checkCopy(ctx, fa, i, s, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkCopy checks one copy of the file and its twins: at key on one store.
func (a *Auditor) checkCopy(ctx context.Context, fa *fileAudit, i int, s side, key string) error {
	// Where the edge reads a reused file is said; its own key is not.
	where := func(detail string) string {
		if key == metadata.FileKey(fa.pkg, fa.version, fa.f.Path) {
			return detail
		}
		if detail == "" {
			return "at its storedAt " + key
		}
		return "at its storedAt " + key + ": " + detail
	}
	data, found, err := read(ctx, s.store, s.files, key)
	if err != nil {
		return err
	}
	var kind string
	// A copy byte for byte equal to one already found right is right:
	// a comparison, not a second hash (most files are right on both).
	if !(found && fa.good != nil && bytes.Equal(data, fa.good)) {
		if err := a.cpu(ctx, func() { kind = CheckFile(fa.f, data, found) }); err != nil {
			return err
		}
	}
	var right []byte
	if kind != "" {
		fa.findings = append(fa.findings, finding{side: i, key: key, kind: kind, detail: where(fileDetail(kind, fa.f, data))})
	} else {
		right = data
		if fa.good == nil {
			fa.good = data
		}
	}
	for _, suffix := range Twins(fa.f) {
		twin, found, err := read(ctx, s.store, s.files, key+suffix)
		if err != nil {
			return err
		}
		var kind, detail string
		// Likewise a twin equal to one that decoded right.
		if !(found && fa.twinGood[suffix] != nil && bytes.Equal(twin, fa.twinGood[suffix])) {
			if err := a.cpu(ctx, func() { kind, detail = CheckTwin(fa.f, suffix, twin, found, right) }); err != nil {
				return err
			}
		}
		switch {
		case kind != "":
			fa.findings = append(fa.findings, finding{side: i, key: key, suffix: suffix, kind: kind, detail: where(detail)})
		case fa.twinGood[suffix] == nil:
			if fa.twinGood == nil {
				fa.twinGood = map[string][]byte{}
			}
			fa.twinGood[suffix] = twin
		}
	}
	return nil
}

func fileDetail(kind string, f metadata.File, data []byte) string {
	switch kind {
	case KindSize:
		return fmt.Sprintf("%d bytes stored, %d recorded", len(data), f.Size)
	case KindSRI:
		return "other bytes at the recorded size"
	}
	return ""
}

// repairFromStores writes the right bytes, where known, over every wrong
// copy: the file from any copy whose bytes have the SRI and size the
// primary's version document records (whichever store or key holds it), a
// twin from a twin that decodes to those bytes, else compressed afresh
// from them. Nothing else is ever written.
func (a *Auditor) repairFromStores(ctx context.Context, fa *fileAudit) error {
	sd := a.sides()
	for i := range fa.findings {
		fd := &fa.findings[i]
		if fd.fixed {
			continue
		}
		s := sd[fd.side]
		if fd.suffix == "" {
			if fa.good == nil {
				continue
			}
			if err := write(ctx, s.store, s.files, fd.key, fa.good, fa.f.ContentType); err != nil {
				return err
			}
			fd.fixed = true
			continue
		}
		twin := fa.twinGood[fd.suffix]
		if twin == nil && fa.good != nil {
			var err error
			if cerr := a.cpu(ctx, func() { twin, err = Encode(fa.f, fd.suffix, fa.good) }); cerr != nil {
				return cerr
			}
			if err != nil {
				return err
			}
		}
		if twin == nil {
			continue
		}
		if err := write(ctx, s.store, s.files, fd.key+fd.suffix, twin, fa.f.ContentType); err != nil {
			return err
		}
		fd.fixed = true
	}
	return nil
}

// needsOriginal says a finding is left that the stores could not repair.
func (fa *fileAudit) needsOriginal() bool {
	for _, fd := range fa.findings {
		if !fd.fixed {
			return true
		}
	}
	return false
}

// report adds the file's findings to rep as problems.
func (fa *fileAudit) report(rep *Report, o Options) {
	sd := [2]string{StorePrimary, StoreMirror}
	if fa.refused != "" {
		// The primary's version document names it: only a new publish mends it.
		rep.add(Problem{Package: fa.pkg, Version: fa.version, File: fa.f.Path, Store: StorePrimary,
			Kind: KindStoredAt, Detail: fa.refused, Reason: reasonStoredAtRefused})
	}
	for _, fd := range fa.findings {
		p := Problem{Package: fa.pkg, Version: fa.version, File: fa.f.Path + fd.suffix, Store: sd[fd.side],
			Kind: fd.kind, Detail: fd.detail, Repaired: fd.fixed}
		if !fd.fixed {
			p.Reason = fa.unrepairable
			if !o.Repair {
				p.Reason = "repair is off"
			}
		}
		rep.add(p)
	}
}
