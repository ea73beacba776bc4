package migrate

import (
	"fmt"
	"slices"
)

// KeyRange selects the keys k with After < k <= Until; an empty After has no
// lower bound and an empty Until no upper one. Ranges cut at the same key
// partition a keyspace exactly: every key is either <= the cut or > it.
type KeyRange struct {
	After string `json:"after,omitempty"`
	Until string `json:"until,omitempty"`
}

// Contains reports whether k is in the range.
func (r KeyRange) Contains(k string) bool {
	return k > r.After && (r.Until == "" || k <= r.Until)
}

// IsZero reports whether the range is unbounded.
func (r KeyRange) IsZero() bool { return r.After == "" && r.Until == "" }

// String describes the range.
func (r KeyRange) String() string {
	switch {
	case r.IsZero():
		return "all keys"
	case r.Until == "":
		return fmt.Sprintf("keys after %q", r.After)
	case r.After == "":
		return fmt.Sprintf("keys up to %q", r.Until)
	}
	return fmt.Sprintf("keys after %q up to %q", r.After, r.Until)
}

// Split is one part of a bucket split by prefix: the range of keys one job
// copies, and the prefixes it starts with (for people).
type Split struct {
	Range    KeyRange `json:"range"`
	Prefixes []string `json:"prefixes"`
}

// SplitByPrefix cuts a keyspace into at most n consecutive ranges, each
// made of whole prefixes (the top-level "folders" of a listing with a
// delimiter), about equally many per range. Keys outside every prefix (at
// the top level) fall in whichever range their order puts them, so together
// the ranges cover every key exactly once.
func SplitByPrefix(prefixes []string, n int) []Split {
	ps := slices.Clone(prefixes)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	if n < 1 {
		n = 1
	}
	if len(ps) <= 1 || n == 1 {
		return []Split{{Prefixes: ps}}
	}
	n = min(n, len(ps))
	splits := make([]Split, 0, n)
	start := 0
	for i := range n {
		end := len(ps) * (i + 1) / n
		splits = append(splits, Split{Prefixes: ps[start:end]})
		start = end
	}
	// Cut just below each range's first prefix: that prefix without its last
	// byte sorts before every key starting with it. A cut that would be
	// empty (a one-byte prefix) means "no bound", so that range joins the
	// one before it.
	out := []Split{splits[0]}
	for _, sp := range splits[1:] {
		first := sp.Prefixes[0]
		cut := first[:len(first)-1]
		if cut == "" || cut <= out[len(out)-1].Range.After {
			out[len(out)-1].Prefixes = append(slices.Clip(out[len(out)-1].Prefixes), sp.Prefixes...)
			continue
		}
		out[len(out)-1].Range.Until = cut
		sp.Range.After = cut
		out = append(out, sp)
	}
	return out
}
