package tarx

// Limits bound what one archive may cost. A zero field means the
// DefaultLimits value for it.
type Limits struct {
	// MaxFileSize is the largest file extracted; larger files are skipped
	// and reported in Result.Skipped.
	MaxFileSize int64
	// MaxFiles is the most non-directory entries an archive may hold.
	MaxFiles int
	// MaxTotalBytes bounds both the uncompressed archive read (headers and
	// skipped content included, so a gzip bomb stops early) and the bytes
	// written to the destination (links are copies, so they count again).
	MaxTotalBytes int64
	// MaxPathBytes and MaxDepth bound an entry's path in the package; a
	// longer or deeper entry is skipped, never written (no object key can
	// hold it, and deep paths are what make extraction slow). Directories
	// created count against MaxFiles, so the work is linear in the archive.
	MaxPathBytes int
	MaxDepth     int
}

// DefaultLimits suit npm and GitHub releases of front-end libraries. No
// file is too large by itself: one may be as large as the whole archive
// may extract to (a release's 200 MiB source map is published; how large
// a file Publish compresses is the catalog's limit, not extraction's).
var DefaultLimits = Limits{
	MaxFileSize:   2 << 30,
	MaxFiles:      200_000,
	MaxTotalBytes: 2 << 30,
	MaxPathBytes:  1024,
	MaxDepth:      64,
}

func (l Limits) withDefaults() Limits {
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultLimits.MaxFileSize
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultLimits.MaxFiles
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultLimits.MaxTotalBytes
	}
	if l.MaxPathBytes <= 0 {
		l.MaxPathBytes = DefaultLimits.MaxPathBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	return l
}

// Entry is one extracted file.
type Entry struct {
	Path string // relative to dest, '/'-separated, top-level folder removed
	Size int64
}

// Skip is an archive entry that was deliberately not extracted.
type Skip struct {
	// Path is the entry's path in the package (top-level folder removed),
	// or its name in the archive when it lies outside that folder.
	Path   string
	Reason string
	// BadName marks an entry skipped for its path alone (too long, too
	// deep, a name over 255 bytes, not UTF-8): it can never be published,
	// whatever is in it.
	BadName bool `json:",omitempty"`
}

// Progress is how far an extraction has got, reported as it goes.
type Progress struct {
	Entries int   // archive entries read
	Bytes   int64 // uncompressed bytes read
}

// Result lists what Extract wrote and what it left out.
type Result struct {
	Files   []Entry // sorted by Path
	Skipped []Skip  // sorted by Path
}
