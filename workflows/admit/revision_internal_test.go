package admit

import (
	"testing"

	engine "github.com/edgeflow/edgeflow/internal/admit"
)

// A run's revision is the longest prefix of changes it took; a change
// taken past a gap is named, not followed.
func TestPrefixRevision(t *testing.T) {
	all := func(n engine.Revision) []bool {
		took := make([]bool, engine.RevCurrent+1)
		for r := range n + 1 {
			took[r] = true
		}
		return took
	}
	for _, tc := range []struct {
		name       string
		took       []bool
		rev, stray engine.Revision
	}{
		{"none", all(engine.RevInitial), engine.RevInitial, 0},
		{"before publish-on-final-reports", all(engine.RevDropUndecodable), engine.RevDropUndecodable, 0},
		{"every one", all(engine.RevCurrent), engine.RevCurrent, 0},
	} {
		if rev, stray := prefixRevision(tc.took); rev != tc.rev || stray != tc.stray {
			t.Errorf("%s: revision %d (stray %d), want %d (%d)", tc.name, rev, stray, tc.rev, tc.stray)
		}
	}
	gap := all(engine.RevCurrent)
	gap[engine.RevStrictPages] = false // pages-read-no-files not taken, the later ones taken
	if rev, stray := prefixRevision(gap); rev != engine.RevStrictPages-1 || stray != engine.RevPublishOnFinals {
		t.Errorf("a gap: revision %d (stray %d), want %d (%d)", rev, stray, engine.RevStrictPages-1, engine.RevPublishOnFinals)
	}
}
