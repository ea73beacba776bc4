// Package tarx extracts release archives, npm .tgz files and GitHub
// tarballs, into a directory without trusting anything the archive says
// about itself: entry names, link targets, sizes and the amount of data
// are all checked, and nothing is ever written outside the destination.
package tarx

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// UnsafeError reports an entry that tries to reach outside the package or
// is a kind of file a release has no business containing.
type UnsafeError struct {
	Entry  string // the entry's name in the archive
	Reason string
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("tarball entry %q: %s", e.Entry, e.Reason)
}

// LimitError reports an archive that exceeds one of the Limits.
type LimitError struct {
	Limit string // "MaxFiles" or "MaxTotalBytes"
	Max   int64
	Entry string // the entry being read when the limit was crossed, if any
}

func (e *LimitError) Error() string {
	what := fmt.Sprintf("%d files", e.Max)
	if e.Limit == "MaxTotalBytes" {
		what = formatSize(e.Max) + " of data"
	}
	if e.Entry == "" {
		return fmt.Sprintf("tarball exceeds the limit of %s (%s)", what, e.Limit)
	}
	return fmt.Sprintf("tarball entry %q: tarball exceeds the limit of %s (%s)", e.Entry, what, e.Limit)
}

// errBudget is what the byte budget returns to archive/tar once the
// archive has grown past MaxTotalBytes; Extract turns it into a LimitError.
var errBudget = errors.New("archive data exceeds MaxTotalBytes")

// Extract reads a gzip-compressed tar stream (or a plain tar stream, when
// the gzip magic is absent) and writes its regular files under dest,
// removing the single top-level folder every release archive has
// ("package/" for npm, "owner-repo-sha/" for GitHub). Directories are
// created 0755 and files 0644 whatever the archive says. Links inside the
// package become copies of their target when that is a file extracted
// before them; other links are skipped. A later entry for the same path
// replaces an earlier one.
//
// Errors are *UnsafeError for hostile entries, *LimitError for archives
// over the limits, and "corrupt archive" errors wrapping the gzip or tar
// failure. After an error dest may hold part of the archive and should be
// discarded.
func Extract(r io.Reader, dest string, lim Limits) (*Result, error) {
	return ExtractContext(context.Background(), r, dest, lim, nil)
}

// ExtractContext is Extract that stops when ctx ends (checked between
// entries and every 32 KiB of data) and calls progress, when not nil,
// after every entry: a caller heartbeats from it, so a stalled extraction
// stops heartbeating.
func ExtractContext(ctx context.Context, r io.Reader, dest string, lim Limits, progress func(Progress)) (*Result, error) {
	lim = lim.withDefaults()
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, fmt.Errorf("extract: create destination: %w", err)
	}
	// os.Root refuses any path, or symlink already in dest, that would
	// lead outside it; the checks below keep us from following in-root
	// symlinks too.
	root, err := os.OpenRoot(dest)
	if err != nil {
		return nil, fmt.Errorf("extract: open destination: %w", err)
	}
	defer root.Close()

	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if len(magic) == 0 {
		if err == nil || err == io.EOF {
			return nil, errors.New("corrupt archive: empty input")
		}
		return nil, fmt.Errorf("corrupt archive: %w", err)
	}
	var stream io.Reader = br
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("corrupt archive: %w", err)
		}
		defer gz.Close()
		stream = gz
	}

	x := &extractor{
		ctx:      ctx,
		root:     root,
		dest:     dest,
		lim:      lim,
		budget:   &byteBudget{r: stream, max: lim.MaxTotalBytes},
		files:    make(map[string]int64),
		skipped:  make(map[string]string),
		badNames: make(map[string]bool),
		dirs:     make(map[string]bool),
	}
	tr := tar.NewReader(x.budget)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, x.readError(err, "")
		}
		if err := x.entry(hdr, tr); err != nil {
			return nil, err
		}
		if progress != nil {
			progress(Progress{Entries: n, Bytes: x.budget.used})
		}
	}
	// Read to the end so a damaged gzip trailer (its CRC and length) is
	// noticed; the budget bounds how much padding this may read.
	if _, err := io.Copy(io.Discard, x.budget); err != nil {
		return nil, x.readError(err, "")
	}
	return x.result(), nil
}

// extractor holds the state of one Extract call.
type extractor struct {
	ctx      context.Context
	root     *os.Root
	dest     string
	lim      Limits
	budget   *byteBudget
	entries  int               // non-directory entries seen, for MaxFiles
	written  int64             // bytes written to dest, for MaxTotalBytes
	files    map[string]int64  // extracted path -> size
	skipped  map[string]string // package path -> reason
	badNames map[string]bool   // skipped for their path alone
	outside  []Skip            // entries beside the top-level folder
	dirs     map[string]bool   // directories known to be real directories in dest
}

func (x *extractor) readError(err error, entry string) error {
	if x.budget.exceeded {
		return &LimitError{Limit: "MaxTotalBytes", Max: x.lim.MaxTotalBytes, Entry: entry}
	}
	if entry != "" {
		return fmt.Errorf("corrupt archive at entry %q: %w", entry, err)
	}
	return fmt.Errorf("corrupt archive: %w", err)
}

func (x *extractor) entry(hdr *tar.Header, content io.Reader) error {
	name := hdr.Name
	switch hdr.Typeflag {
	case tar.TypeXGlobalHeader:
		// GitHub's pax_global_header only records the commit id.
		return nil
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return &UnsafeError{Entry: name, Reason: "device or FIFO entries are not allowed in a release"}
	}
	rel, err := packagePath(name)
	if err != nil {
		return err
	}
	if hdr.Typeflag == tar.TypeDir {
		// Directories are created as files need them; an empty one has
		// nothing to publish.
		return nil
	}
	if x.entries++; x.entries > x.lim.MaxFiles {
		return &LimitError{Limit: "MaxFiles", Max: int64(x.lim.MaxFiles), Entry: name}
	}
	// Link targets are checked even for entries that end up skipped: a
	// target climbing out of the package is hostile wherever it sits.
	isLink := hdr.Typeflag == tar.TypeSymlink || hdr.Typeflag == tar.TypeLink
	var target string
	switch {
	case isLink && hdr.Linkname == "":
		// Nothing to resolve and nothing hostile; skipped below.
	case hdr.Typeflag == tar.TypeSymlink:
		target, err = symlinkTarget(name, rel, hdr.Linkname)
	case hdr.Typeflag == tar.TypeLink:
		target, err = hardlinkTarget(name, hdr.Linkname)
	}
	if err != nil {
		return err
	}
	if rel == "" {
		x.outside = append(x.outside, Skip{Path: name, Reason: "not inside the archive's top-level folder"})
		return nil
	}
	if reason := x.badName(rel); reason != "" {
		x.badNames[rel] = true
		return x.skip(rel, reason)
	}

	if isLink && target == "" {
		return x.skip(rel, "link has no target")
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeCont:
		if isSparse(hdr) {
			return x.skip(rel, "sparse files are not supported")
		}
		if hdr.Size > x.lim.MaxFileSize {
			return x.skip(rel, fmt.Sprintf("larger than %s (%d bytes)", formatSize(x.lim.MaxFileSize), hdr.Size))
		}
		return x.writeFile(name, rel, hdr.Size, content)
	case tar.TypeSymlink:
		return x.copyLink(name, rel, target, "symlink")
	case tar.TypeLink:
		return x.copyLink(name, rel, target, "hardlink")
	default:
		return x.skip(rel, fmt.Sprintf("unsupported entry type %q", hdr.Typeflag))
	}
}

func (x *extractor) writeFile(name, rel string, size int64, content io.Reader) error {
	f, reason, err := x.create(name, rel)
	if err != nil || reason != "" {
		if err == nil {
			err = x.skip(rel, reason)
		}
		return err
	}
	if err := x.chargeWrite(name, size); err != nil {
		_ = f.Close() // empty: the limit's error is the one to return
		return err
	}
	n, readErr, writeErr := copyEntry(x.ctx, f, content)
	if closeErr := f.Close(); writeErr == nil {
		writeErr = closeErr
	}
	switch {
	case readErr != nil:
		return x.readError(readErr, name)
	case writeErr != nil:
		return fmt.Errorf("extract %q: %w", name, writeErr)
	}
	x.recordFile(rel, n)
	return nil
}

// copyEntry copies an entry's content, telling a damaged archive apart
// from a failing disk.
func copyEntry(ctx context.Context, dst io.Writer, src io.Reader) (n int64, readErr, writeErr error) {
	buf := make([]byte, 32<<10)
	for {
		if err := ctx.Err(); err != nil {
			return n, nil, err
		}
		nr, err := src.Read(buf)
		if nr > 0 {
			nw, err := dst.Write(buf[:nr])
			n += int64(nw)
			if err != nil {
				return n, nil, err
			}
		}
		if err == io.EOF {
			return n, nil, nil
		}
		if err != nil {
			return n, err, nil
		}
	}
}

// copyLink materialises a link as a copy of its target, so the published
// files never depend on links and never point anywhere else.
func (x *extractor) copyLink(name, rel, target, kind string) error {
	size, ok := x.files[target]
	switch {
	case target == rel:
		return x.skip(rel, fmt.Sprintf("%s to itself", kind))
	case !ok:
		return x.skip(rel, fmt.Sprintf("%s to %q, which is not a regular file extracted before it", kind, target))
	}
	src, err := x.root.Open(target)
	if err != nil {
		return fmt.Errorf("extract %q: open link target: %w", name, err)
	}
	defer func() { _ = src.Close() }() // read-only
	dst, reason, err := x.create(name, rel)
	if err != nil || reason != "" {
		if err == nil {
			err = x.skip(rel, reason)
		}
		return err
	}
	if err := x.chargeWrite(name, size); err != nil {
		_ = dst.Close() // empty: the limit's error is the one to return
		return err
	}
	n, err := io.Copy(dst, io.LimitReader(src, size))
	if closeErr := dst.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("extract %q: copy link target: %w", name, err)
	}
	x.recordFile(rel, n)
	return nil
}

func (x *extractor) chargeWrite(name string, size int64) error {
	if x.written += size; x.written > x.lim.MaxTotalBytes {
		return &LimitError{Limit: "MaxTotalBytes", Max: x.lim.MaxTotalBytes, Entry: name}
	}
	return nil
}

// create opens rel for writing, creating its parent directories. It
// returns a skip reason instead of a file when the path clashes with what
// the archive already put there.
func (x *extractor) create(name, rel string) (*os.File, string, error) {
	if reason, err := x.mkdirs(name, path.Dir(rel)); err != nil || reason != "" {
		return nil, reason, err
	}
	if info, err := x.root.Lstat(rel); err == nil {
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			return nil, "", x.refuseSymlink(name, rel)
		case info.IsDir():
			return nil, "a directory of the same name came earlier in the archive", nil
		case !info.Mode().IsRegular():
			return nil, "", fmt.Errorf("extract %q: %s already exists in %s and is not a regular file", name, rel, x.dest)
		}
		// An earlier entry for the same path: the later one wins.
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("extract %q: %w", name, err)
	}
	f, err := x.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, "", fmt.Errorf("extract %q: %w", name, err)
	}
	return f, "", nil
}

// mkdirs makes every directory of dir, checking that each existing one is
// a real directory rather than a file or a symlink.
func (x *extractor) mkdirs(name, dir string) (string, error) {
	if dir == "." || x.dirs[dir] {
		return "", nil
	}
	parent := path.Dir(dir)
	if reason, err := x.mkdirs(name, parent); err != nil || reason != "" {
		return reason, err
	}
	info, err := x.root.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// A directory costs like a file: MaxFiles bounds them together.
		if x.entries++; x.entries > x.lim.MaxFiles {
			return "", &LimitError{Limit: "MaxFiles", Max: int64(x.lim.MaxFiles), Entry: name}
		}
		if err := x.root.Mkdir(dir, 0o755); err != nil {
			return "", fmt.Errorf("extract %q: %w", name, err)
		}
	case err != nil:
		return "", fmt.Errorf("extract %q: %w", name, err)
	case info.Mode()&os.ModeSymlink != 0:
		return "", x.refuseSymlink(name, dir)
	case !info.IsDir():
		return fmt.Sprintf("its parent %q is a file earlier in the archive", dir), nil
	}
	x.dirs[dir] = true
	return "", nil
}

// badName explains why a package path can never be published, or is "".
// It is checked before anything touches the disk.
func (x *extractor) badName(rel string) string {
	if len(rel) > x.lim.MaxPathBytes {
		return fmt.Sprintf("path is %d bytes long; the limit is %d", len(rel), x.lim.MaxPathBytes)
	}
	if depth := strings.Count(rel, "/") + 1; depth > x.lim.MaxDepth {
		return fmt.Sprintf("path is %d folders deep; the limit is %d", depth, x.lim.MaxDepth)
	}
	if !utf8.ValidString(rel) {
		return "path is not valid UTF-8"
	}
	for _, part := range strings.Split(rel, "/") {
		if len(part) > 255 {
			return fmt.Sprintf("a name in the path is %d bytes long; the limit is 255", len(part))
		}
	}
	return ""
}

// refuseSymlink reports a symlink that was in dest before extraction; the
// archive cannot create one, and writing through it could land anywhere.
func (x *extractor) refuseSymlink(name, rel string) error {
	return fmt.Errorf("extract %q: %s in %s is a symlink that was there before extraction; refusing to follow it", name, rel, x.dest)
}

func (x *extractor) recordFile(rel string, size int64) {
	x.files[rel] = size
	delete(x.skipped, rel)
}

// skip records why the entry for rel was not extracted. A file an earlier
// entry put at the same path is removed: the last entry for a path
// decides it.
func (x *extractor) skip(rel, reason string) error {
	if _, ok := x.files[rel]; ok {
		if err := x.root.Remove(rel); err != nil {
			return fmt.Errorf("extract: remove %q, replaced by a skipped entry: %w", rel, err)
		}
		delete(x.files, rel)
	}
	x.skipped[rel] = reason
	return nil
}

func (x *extractor) result() *Result {
	res := &Result{}
	for p, size := range x.files {
		res.Files = append(res.Files, Entry{Path: p, Size: size})
	}
	for p, reason := range x.skipped {
		res.Skipped = append(res.Skipped, Skip{Path: p, Reason: reason, BadName: x.badNames[p]})
	}
	res.Skipped = append(res.Skipped, x.outside...)
	sort.Slice(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	sort.SliceStable(res.Skipped, func(i, j int) bool { return res.Skipped[i].Path < res.Skipped[j].Path })
	return res
}

// byteBudget counts the uncompressed bytes archive/tar reads and fails
// once they pass max, whatever the headers claim.
type byteBudget struct {
	r        io.Reader
	used     int64
	max      int64
	exceeded bool
}

func (b *byteBudget) Read(p []byte) (int, error) {
	if b.exceeded {
		return 0, errBudget
	}
	// Ask for at most one byte beyond the budget: enough to know it is
	// exceeded without decompressing more.
	if room := b.max - b.used + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.used += int64(n)
	if b.used > b.max {
		b.exceeded = true
		return 0, errBudget
	}
	return n, err
}

// formatSize renders a byte count the way limits are usually stated.
func formatSize(n int64) string {
	const kib, mib, gib = 1 << 10, 1 << 20, 1 << 30
	switch {
	case n >= gib && n%gib == 0:
		return fmt.Sprintf("%d GiB", n/gib)
	case n >= mib && n%mib == 0:
		return fmt.Sprintf("%d MiB", n/mib)
	case n >= kib && n%kib == 0:
		return fmt.Sprintf("%d KiB", n/kib)
	case n >= mib:
		return fmt.Sprintf("%.1f MiB", float64(n)/mib)
	}
	return fmt.Sprintf("%d bytes", n)
}
