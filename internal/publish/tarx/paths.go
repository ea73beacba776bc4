package tarx

import (
	"archive/tar"
	"fmt"
	"path"
	"strings"
)

// packagePath checks an entry name and returns its path inside the
// package, or "" for the top-level folder itself and anything beside it.
func packagePath(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", &UnsafeError{Entry: name, Reason: "name contains a NUL byte"}
	}
	if strings.HasPrefix(name, "/") {
		return "", &UnsafeError{Entry: name, Reason: "absolute path"}
	}
	cleaned := path.Clean(name)
	if escapes(cleaned) {
		return "", &UnsafeError{Entry: name, Reason: "path escapes the package"}
	}
	_, rel, _ := strings.Cut(cleaned, "/")
	return rel, nil
}

// symlinkTarget resolves a symlink's target, relative to the link's own
// directory, to a path inside the package.
func symlinkTarget(name, rel, linkname string) (string, error) {
	switch {
	case strings.IndexByte(linkname, 0) >= 0:
		return "", &UnsafeError{Entry: name, Reason: "symlink target contains a NUL byte"}
	case strings.HasPrefix(linkname, "/"):
		return "", &UnsafeError{Entry: name, Reason: fmt.Sprintf("symlink target %q is absolute and leaves the package", linkname)}
	}
	// path.Dir("") is ".", so a link beside the top-level folder resolves
	// against the package root too.
	target := path.Join(path.Dir(rel), linkname)
	if escapes(target) {
		return "", &UnsafeError{Entry: name, Reason: fmt.Sprintf("symlink target %q leaves the package", linkname)}
	}
	return target, nil
}

// hardlinkTarget turns a hardlink's target, which names another archive
// entry, into a path inside the package.
func hardlinkTarget(name, linkname string) (string, error) {
	switch {
	case strings.IndexByte(linkname, 0) >= 0:
		return "", &UnsafeError{Entry: name, Reason: "hardlink target contains a NUL byte"}
	case strings.HasPrefix(linkname, "/"):
		return "", &UnsafeError{Entry: name, Reason: fmt.Sprintf("hardlink target %q is absolute and leaves the package", linkname)}
	}
	cleaned := path.Clean(linkname)
	_, target, inside := strings.Cut(cleaned, "/")
	if escapes(cleaned) || !inside {
		return "", &UnsafeError{Entry: name, Reason: fmt.Sprintf("hardlink target %q leaves the package", linkname)}
	}
	return target, nil
}

// escapes reports whether a cleaned relative path climbs above its root.
func escapes(cleaned string) bool {
	return cleaned == ".." || strings.HasPrefix(cleaned, "../")
}

// isSparse reports sparse files, whose content archive/tar synthesises:
// a tiny archive could otherwise expand to files of any size.
func isSparse(hdr *tar.Header) bool {
	for key := range hdr.PAXRecords {
		if strings.HasPrefix(key, "GNU.sparse.") {
			return true
		}
	}
	return false
}
