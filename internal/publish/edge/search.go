package edge

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/edgeflow/edgeflow/internal/textdist"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// searchIndex is the search index document prepared for matching: lower-cased
// and separator-free forms are computed once per index load, not per query.
type searchIndex struct {
	libraries []indexedLibrary // sorted by name
	byName    map[string]int
}

type indexedLibrary struct {
	metadata.IndexEntry
	lowerName   string
	compactName string   // lowerName without '-', '.', '_' and spaces: "font-awesome" → "fontawesome"
	keywords    []string // lower-cased
	description string   // lower-cased
	descWords   []string // words of description, for typo-tolerant matching
}

func newSearchIndex(entries []metadata.IndexEntry) *searchIndex {
	ix := &searchIndex{libraries: make([]indexedLibrary, 0, len(entries)), byName: make(map[string]int, len(entries))}
	for _, e := range entries {
		if e.Name == "" {
			continue
		}
		lib := indexedLibrary{IndexEntry: e, lowerName: strings.ToLower(e.Name), description: strings.ToLower(e.Description)}
		lib.compactName = compact(lib.lowerName)
		for _, k := range e.Keywords {
			lib.keywords = append(lib.keywords, strings.ToLower(k))
		}
		lib.descWords = strings.FieldsFunc(lib.description, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
		})
		ix.libraries = append(ix.libraries, lib)
	}
	slices.SortFunc(ix.libraries, func(a, b indexedLibrary) int { return strings.Compare(a.Name, b.Name) })
	ix.libraries = slices.CompactFunc(ix.libraries, func(a, b indexedLibrary) bool { return a.Name == b.Name })
	for i := range ix.libraries {
		ix.byName[ix.libraries[i].Name] = i
	}
	return ix
}

// compact drops the separators people type or leave out inconsistently.
func compact(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '.', '_', ' ':
			return -1
		}
		return r
	}, s)
}

// Match tiers, best first. Within a tier, a smaller edit distance ranks
// first, then a shorter name (closer to what was typed), then the name.
const (
	tierExactName = iota
	tierNamePrefix
	tierNameSubstring
	tierNameFuzzy
	tierKeywordExact
	tierKeywordPartial
	tierKeywordFuzzy
	tierDescription
	tierDescriptionFuzzy
	tierAllTerms // every word of a multi-word query matched somewhere
	noMatch
)

// searchFields says where a query is looked for.
type searchFields struct{ name, keywords, description bool }

// defaultSearchFields is used when the request names none it knows.
var defaultSearchFields = searchFields{name: true, keywords: true, description: true}

// parseSearchFields reads the search_fields parameter; unknown names are
// ignored, as cdnjs does, and nothing known means the defaults.
func parseSearchFields(param string) searchFields {
	var f searchFields
	for _, field := range strings.Split(param, ",") {
		switch strings.TrimSpace(field) {
		case "name":
			f.name = true
		case "keywords":
			f.keywords = true
		case "description":
			f.description = true
		}
	}
	if f == (searchFields{}) {
		return defaultSearchFields
	}
	return f
}

type searchHit struct {
	lib      *indexedLibrary
	tier     int
	distance int
}

// maxEdits is the typo tolerance for a query of n bytes: none for one or two
// letters (everything would match), one for short words, two for long ones.
func maxEdits(n int) int {
	switch {
	case n <= 2:
		return 0
	case n <= 5:
		return 1
	}
	return 2
}

// Bounds of a search query: each library costs time per byte and per term,
// so a 64 KB query over thousands of libraries would cost seconds of CPU.
// Real queries are a few words.
const (
	MaxSearchQueryBytes = 256
	MaxSearchTerms      = 8
)

// boundQuery lower-cases and trims a query, cut to MaxSearchQueryBytes (at
// a character boundary), and returns its first MaxSearchTerms words.
func boundQuery(query string) (string, []string) {
	q := strings.TrimSpace(query)
	if len(q) > MaxSearchQueryBytes {
		cut := MaxSearchQueryBytes
		for cut > 0 && !utf8.RuneStart(q[cut]) {
			cut--
		}
		q = q[:cut]
	}
	q = strings.ToLower(strings.TrimSpace(q))
	terms := strings.Fields(q)
	if len(terms) > MaxSearchTerms {
		terms = terms[:MaxSearchTerms]
		q = strings.Join(terms, " ")
	}
	return q, terms
}

// search ranks the libraries matching query: exact name, name prefix, name
// substring, name within a few typos, then keyword and description matches.
// The query is bounded first (see boundQuery).
func (ix *searchIndex) search(query string, fields searchFields) []searchHit {
	q, terms := boundQuery(query)
	if q == "" {
		return nil
	}
	var hits []searchHit
	for i := range ix.libraries {
		lib := &ix.libraries[i]
		tier, dist := matchLibrary(lib, q, fields)
		if tier == noMatch && len(terms) > 1 {
			tier, dist = matchAllTerms(lib, terms, fields)
		}
		if tier != noMatch {
			hits = append(hits, searchHit{lib: lib, tier: tier, distance: dist})
		}
	}
	slices.SortFunc(hits, func(a, b searchHit) int {
		if a.tier != b.tier {
			return a.tier - b.tier
		}
		if a.distance != b.distance {
			return a.distance - b.distance
		}
		if len(a.lib.Name) != len(b.lib.Name) {
			return len(a.lib.Name) - len(b.lib.Name)
		}
		return strings.Compare(a.lib.Name, b.lib.Name)
	})
	return hits
}

// matchLibrary returns the best tier at which q (lower-cased) matches lib.
func matchLibrary(lib *indexedLibrary, q string, fields searchFields) (tier, distance int) {
	qc := compact(q)
	if qc == "" {
		return noMatch, 0
	}
	k := maxEdits(len(qc))
	if fields.name {
		switch {
		case lib.lowerName == q:
			return tierExactName, 0
		case strings.HasPrefix(lib.lowerName, q):
			return tierNamePrefix, 0
		case lib.compactName == qc:
			return tierNamePrefix, 0
		case strings.HasPrefix(lib.compactName, qc):
			return tierNamePrefix, 1
		case strings.Contains(lib.lowerName, q) || strings.Contains(lib.compactName, qc):
			return tierNameSubstring, 0
		}
		if d, ok := fuzzyName(lib.compactName, qc, k); ok {
			return tierNameFuzzy, d
		}
	}
	best := noMatch
	bestDist := 0
	consider := func(t, d int) {
		if t < best || t == best && d < bestDist {
			best, bestDist = t, d
		}
	}
	if fields.keywords {
		for _, kw := range lib.keywords {
			switch {
			case kw == q:
				consider(tierKeywordExact, 0)
			case strings.Contains(kw, q):
				consider(tierKeywordPartial, 0)
			default:
				if d, ok := withinEdits(kw, q, k); ok {
					consider(tierKeywordFuzzy, d)
				}
			}
		}
	}
	if fields.description && best > tierDescription && len(q) >= 3 {
		if strings.Contains(lib.description, q) {
			consider(tierDescription, 0)
		} else if !strings.Contains(q, " ") && k > 0 {
			for _, w := range lib.descWords {
				if d, ok := withinEdits(w, q, k); ok {
					consider(tierDescriptionFuzzy, d)
				}
			}
		}
	}
	return best, bestDist
}

// matchAllTerms matches a multi-word query word by word: every word must
// match somewhere; the distance is the sum of the words' tiers, so entries
// whose words match better rank first.
func matchAllTerms(lib *indexedLibrary, terms []string, fields searchFields) (tier, distance int) {
	total := 0
	for _, term := range terms {
		t, d := matchLibrary(lib, term, fields)
		if t == noMatch {
			return noMatch, 0
		}
		total += t*4 + d
	}
	return tierAllTerms, total
}

// fuzzyName matches a (compact) name against a (compact) query with at most k
// edits, either as a whole or as a prefix of the name (so "jqury" finds
// "jquery-ui"). Whole-name matches rank ahead of prefix ones at equal edits.
func fuzzyName(name, q string, k int) (int, bool) {
	if d, ok := withinEdits(name, q, k); ok {
		return 2 * d, true
	}
	best, found := 0, false
	for n := len(q) - k; n <= len(q)+k; n++ {
		if n < 3 || n >= len(name) {
			continue
		}
		if d, ok := withinEdits(name[:n], q, k); ok && (!found || 2*d+1 < best) {
			best, found = 2*d+1, true
		}
	}
	return best, found
}

// withinEdits reports the Damerau-Levenshtein (optimal string alignment)
// distance of a and b when it is at most k. Bytes are compared, which is
// exact for the ASCII names and keywords of a catalog.
func withinEdits(a, b string, k int) (int, bool) {
	if k <= 0 {
		return 0, a == b
	}
	if diff := len(a) - len(b); diff > k || -diff > k {
		return 0, false
	}
	d := textdist.Distance(a, b, k)
	return d, d <= k
}
