package keyring

import "testing"

// A signer's tags verify under any key of the ring, only for their purpose
// and parts, and a ring without the key refuses them.
func TestSignerRotatesAndBindsPurpose(t *testing.T) {
	oldKey, newKey := mustKey(t, "old"), mustKey(t, "new")
	before := mustRing(t, oldKey).Signer("p1")
	rotated := mustRing(t, newKey, oldKey).Signer("p1")
	tag := before.Sign("a", "b")
	if !rotated.Verify(tag, "a", "b") {
		t.Fatal("a tag of the old primary key does not verify once rotated")
	}
	if got := rotated.Sign("a", "b"); got[:4] != "new:" || !rotated.Verify(got, "a", "b") {
		t.Fatalf("the rotated ring signs %q, want the new primary's tag", got)
	}
	for name, ok := range map[string]bool{
		"other parts":   rotated.Verify(tag, "a", "c"),
		"moved bytes":   rotated.Verify(tag, "ab", ""),
		"other purpose": mustRing(t, oldKey).Signer("p2").Verify(tag, "a", "b"),
		"key dropped":   mustRing(t, newKey).Signer("p1").Verify(tag, "a", "b"),
		"no tag":        rotated.Verify("", "a", "b"),
		"garbage":       rotated.Verify("old:!!", "a", "b"),
	} {
		if ok {
			t.Errorf("%s: verifies", name)
		}
	}
}
