package metadata

import (
	"fmt"
	"strings"
	"testing"
)

func TestStagingKeys(t *testing.T) {
	for _, k := range []string{PlanKey("p", "1.0.0"), BatchKey("p", "1.0.0", 7), ResultKey("p", "1.0.0", 7)} {
		if !strings.HasPrefix(k, StagingPrefix("p", "1.0.0")) {
			t.Errorf("%s is outside the version's staging prefix", k)
		}
	}
	if BatchKey("p", "1", 3) == BatchKey("p", "1", 30) || BatchKey("p", "1", 3) == ResultKey("p", "1", 3) {
		t.Error("staging keys collide")
	}
	// Zero-padded, so a listing is in batch order.
	if !(BatchKey("p", "1", 9) < BatchKey("p", "1", 10)) {
		t.Error("batch keys do not sort in batch order")
	}
}

func TestMetaKeysDoNotOverlap(t *testing.T) {
	keys := []string{PackageKey("p"), VersionKey("p", "1.0.0"), SearchIndexKey, SearchShardKey(0), SearchShardKey(SearchShards - 1),
		ReuseIndexKey("p"), RegistryCacheKey("p"), RejectedKey("p", "1.0.0"), ImportWindowKey("p")}
	for i, a := range keys {
		for _, b := range keys[i+1:] {
			if strings.HasPrefix(a, b) || strings.HasPrefix(b, a) {
				t.Errorf("Meta keys %s and %s overlap", a, b)
			}
		}
	}
	if !strings.HasPrefix(RejectedKey("p", "1.0.0"), RejectedPrefix("p")) || strings.HasPrefix(RejectedKey("pq", "1"), RejectedPrefix("p")) {
		t.Error("a package's rejection markers must be exactly those under its prefix")
	}
}

// TestSearchShardsSpreadTheCatalog: names spread over every shard, so a
// commit rewrites about 1/SearchShards of the index.
func TestSearchShardsSpreadTheCatalog(t *testing.T) {
	counts := make([]int, SearchShards)
	for i := range 6400 {
		counts[SearchShardOf(fmt.Sprintf("lib-%d", i))]++
	}
	for i, n := range counts {
		if n < 50 || n > 150 {
			t.Errorf("shard %d holds %d of 6,400 libraries; want about 100", i, n)
		}
	}
	// Pinned: the stored shards were written under these, so the hash may
	// not change between runs or releases.
	for name, want := range map[string]int{"jquery": 27, "react": 28, "lodash.js": 25, "vue": 3} {
		if got := SearchShardOf(name); got != want {
			t.Errorf("SearchShardOf(%q) = %d, want %d: a library's shard is not stable", name, got, want)
		}
	}
}
