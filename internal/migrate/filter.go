package migrate

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Filter is what a job leaves out of its listing (--include, --exclude,
// --min-size, --max-size, --modified-after, --modified-before). The zero
// Filter keeps every object.
type Filter struct {
	// Rules are tried in order on a key below the source prefix; the first
	// that matches decides. With any include rule, a key no rule matches is
	// left out (rclone's implied "- **"); otherwise it is kept.
	Rules []FilterRule `json:"rules,omitempty"`
	// MinSize and MaxSize keep objects of at least and at most that many
	// bytes; nil has no bound.
	MinSize *int64 `json:"minSize,omitempty"`
	MaxSize *int64 `json:"maxSize,omitempty"`
	// ModifiedAfter keeps objects last modified at or after it,
	// ModifiedBefore those modified before it; zero has no bound.
	ModifiedAfter  time.Time `json:"modifiedAfter,omitzero"`
	ModifiedBefore time.Time `json:"modifiedBefore,omitzero"`
}

// FilterRule is one pattern: exactly one of Include and Exclude is set.
type FilterRule struct {
	Include string `json:"include,omitempty"`
	Exclude string `json:"exclude,omitempty"`
}

// Pattern is the rule's pattern and whether it includes.
func (r FilterRule) Pattern() (pattern string, include bool) {
	if r.Include != "" {
		return r.Include, true
	}
	return r.Exclude, false
}

// String is the rule as its flag: --include "*.jpg".
func (r FilterRule) String() string {
	p, inc := r.Pattern()
	if inc {
		return fmt.Sprintf("--include %q", p)
	}
	return fmt.Sprintf("--exclude %q", p)
}

// IsZero reports whether f leaves nothing out.
func (f Filter) IsZero() bool {
	return len(f.Rules) == 0 && f.MinSize == nil && f.MaxSize == nil && f.ModifiedAfter.IsZero() && f.ModifiedBefore.IsZero()
}

// OnObjects reports whether f looks at more than keys (size or time), which
// a key list (no sizes until copied) cannot answer.
func (f Filter) OnObjects() bool {
	return f.MinSize != nil || f.MaxSize != nil || !f.ModifiedAfter.IsZero() || !f.ModifiedBefore.IsZero()
}

// Check reports the first thing wrong with f: a pattern that does not
// compile (naming the rule and its place), a negative size, or bounds that
// keep nothing.
func (f Filter) Check() error {
	_, err := f.Compile()
	return err
}

// Compile checks f and makes its matcher.
func (f Filter) Compile() (*KeyFilter, error) {
	kf := &KeyFilter{f: f}
	for i, r := range f.Rules {
		p, include := r.Pattern()
		if (r.Include == "") == (r.Exclude == "") {
			return nil, fmt.Errorf("filter rule %d: give exactly one of include and exclude, not empty", i+1)
		}
		re, err := CompileGlob(p)
		if err != nil {
			return nil, fmt.Errorf("%s (filter rule %d): %w", r, i+1, err)
		}
		kf.rules = append(kf.rules, compiledRule{re: re, include: include})
		kf.anyInclude = kf.anyInclude || include
	}
	switch {
	case f.MinSize != nil && *f.MinSize < 0:
		return nil, fmt.Errorf("--min-size %d: a size is not negative", *f.MinSize)
	case f.MaxSize != nil && *f.MaxSize < 0:
		return nil, fmt.Errorf("--max-size %d: a size is not negative", *f.MaxSize)
	case f.MinSize != nil && f.MaxSize != nil && *f.MinSize > *f.MaxSize:
		return nil, fmt.Errorf("--min-size %d is above --max-size %d: nothing would be copied", *f.MinSize, *f.MaxSize)
	case !f.ModifiedAfter.IsZero() && !f.ModifiedBefore.IsZero() && !f.ModifiedAfter.Before(f.ModifiedBefore):
		return nil, fmt.Errorf("--modified-after %s is not before --modified-before %s: nothing would be copied",
			f.ModifiedAfter.UTC().Format(time.RFC3339), f.ModifiedBefore.UTC().Format(time.RFC3339))
	}
	return kf, nil
}

// KeyFilter is a compiled Filter. A nil *KeyFilter keeps everything.
type KeyFilter struct {
	f          Filter
	rules      []compiledRule
	anyInclude bool
}

type compiledRule struct {
	re      *regexp.Regexp
	include bool
}

// KeepKey reports whether the patterns keep a key, given below the source
// prefix (RelativeKey).
func (k *KeyFilter) KeepKey(rel string) bool {
	if k == nil {
		return true
	}
	for _, r := range k.rules {
		if r.re.MatchString(rel) {
			return r.include
		}
	}
	return !k.anyInclude
}

// KeepSize reports whether the size bounds keep an object of size bytes.
func (k *KeyFilter) KeepSize(size int64) bool {
	if k == nil {
		return true
	}
	return (k.f.MinSize == nil || size >= *k.f.MinSize) && (k.f.MaxSize == nil || size <= *k.f.MaxSize)
}

// Keep reports whether the filter keeps a listed object, whose key below
// the source prefix is rel.
func (k *KeyFilter) Keep(o Object, rel string) bool {
	if k == nil {
		return true
	}
	if !k.KeepKey(rel) || !k.KeepSize(o.Size) {
		return false
	}
	if !k.f.ModifiedAfter.IsZero() && o.LastModified.Before(k.f.ModifiedAfter) {
		return false
	}
	if !k.f.ModifiedBefore.IsZero() && !o.LastModified.Before(k.f.ModifiedBefore) {
		return false
	}
	return true
}

// RelativeKey is key below prefix, as filter patterns see it: a source
// prefix is the root of the patterns, as the root of a remote is rclone's.
// A prefix that does not end in "/" ("img") is a directory for them too:
// "img/a.png" is "a.png".
func RelativeKey(prefix, key string) string {
	rel := strings.TrimPrefix(key, prefix)
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		rel = strings.TrimPrefix(rel, "/")
	}
	return rel
}

// FilterListed splits a listed page into the objects the filter keeps
// (with their bytes) and the keys it leaves out, both in listing order.
func FilterListed(k *KeyFilter, prefix string, l Listed) (kept Listed, excluded []string) {
	if k == nil {
		return l, nil
	}
	kept = Listed{Next: l.Next, Last: l.Last}
	for _, o := range l.Objects {
		if k.Keep(o, RelativeKey(prefix, o.Key)) {
			kept.Objects = append(kept.Objects, o)
			kept.Bytes += o.Size
		} else {
			excluded = append(excluded, o.Key)
		}
	}
	return kept, excluded
}

// FilterKeys keeps the keys of a key list (no sizes yet) the patterns keep.
func FilterKeys(k *KeyFilter, l Listed) (kept Listed, excluded []string) {
	if k == nil {
		return l, nil
	}
	kept = Listed{Next: l.Next, Last: l.Last}
	for _, o := range l.Objects {
		if k.KeepKey(o.Key) {
			kept.Objects = append(kept.Objects, o)
		} else {
			excluded = append(excluded, o.Key)
		}
	}
	return kept, excluded
}
