package migrate

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A key list (--keys FILE) has one key per line, exactly as stored: nothing
// is trimmed but a final "\r" (so keys with spaces survive), and blank lines
// are skipped. Pages of it are read by byte offset, which is its
// continuation token.

// CheckKeyList reads a whole key list and returns its number of keys, or an
// error naming the first few bad lines, so a bad list is refused before the
// job starts.
func CheckKeyList(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 4096)
	sc.Split(splitLines)
	n, line := 0, 0
	var problems []string
	for sc.Scan() {
		line++
		k := strings.TrimSuffix(sc.Text(), "\r")
		if k == "" {
			continue
		}
		if err := CheckKey(k); err != nil {
			if len(problems) < 10 {
				problems = append(problems, fmt.Sprintf("line %d: %v", line, err))
			}
			continue
		}
		n++
	}
	if err := sc.Err(); err != nil {
		if err != bufio.ErrTooLong {
			return n, err
		}
		problems = append(problems, fmt.Sprintf("line %d: longer than 1024 bytes, the longest key S3 allows (checking stopped there)", line+1))
	}
	if len(problems) > 0 {
		return n, fmt.Errorf("%d bad lines:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	if n == 0 {
		return 0, fmt.Errorf("the key list is empty")
	}
	return n, nil
}

// splitLines splits at "\n" only, as KeyListPage does: bufio.ScanLines
// would also drop a "\r" before it, and a key ending in "\r" would then be
// checked as another key than the one the job copies.
func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// MaxKeyListChunk is how many bytes of a key list one page may need: a
// page of max keys of at most 1024 bytes each, with their newlines.
func MaxKeyListChunk(max int) int64 { return int64(max) * 1026 }

// KeyListPage takes up to max keys from chunk, which starts at byte offset
// of the list; atEOF says chunk reaches the end of the list. It returns the
// keys and the token of the next page ("" at the end).
func KeyListPage(chunk []byte, offset int64, atEOF bool, max int) (keys []string, next string) {
	pos := 0
	for len(keys) < max && pos < len(chunk) {
		nl := bytes.IndexByte(chunk[pos:], '\n')
		var line []byte
		if nl < 0 {
			if !atEOF {
				break // a partial line: the next page starts with it
			}
			line, pos = chunk[pos:], len(chunk)
		} else {
			line, pos = chunk[pos:pos+nl], pos+nl+1
		}
		if k := strings.TrimSuffix(string(line), "\r"); k != "" {
			keys = append(keys, k)
		}
	}
	if atEOF && pos >= len(chunk) {
		return keys, ""
	}
	return keys, strconv.FormatInt(offset+int64(pos), 10)
}

// KeyListOffset reads a key list's continuation token.
func KeyListOffset(token string) (int64, error) {
	if token == "" {
		return 0, nil
	}
	off, err := strconv.ParseInt(token, 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("malformed key list token %q", token)
	}
	return off, nil
}
