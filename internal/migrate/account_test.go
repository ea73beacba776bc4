package migrate

import (
	"slices"
	"testing"
)

func TestJobQueue(t *testing.T) {
	q := JobQueue{Limit: 2}
	for _, j := range []string{"a", "b"} {
		if !q.Request(j) {
			t.Fatalf("%s waits with a free slot", j)
		}
	}
	if q.Request("c") || q.Request("d") {
		t.Fatal("a third job runs with a limit of 2")
	}
	if q.Request("c") || len(q.Waiting) != 2 {
		t.Fatalf("asking twice queues twice: %+v", q)
	}
	if !q.Request("a") {
		t.Fatal("a running job asking again is refused")
	}
	if q.Position("c") != 1 || q.Position("d") != 2 || q.Position("a") != 0 || q.Position("zz") != -1 {
		t.Fatalf("positions %d %d %d", q.Position("c"), q.Position("d"), q.Position("a"))
	}
	// First come, first served.
	if got := q.Release("a"); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("release a granted %v, want [c]", got)
	}
	// A job that leaves the line frees no slot.
	if got := q.Release("d"); len(got) != 0 {
		t.Fatalf("release of a waiting job granted %v", got)
	}
	q.Request("e")
	q.Request("f")
	if got := q.SetLimit(4); !slices.Equal(got, []string{"e", "f"}) {
		t.Fatalf("raising the limit granted %v", got)
	}
	// A newcomer never jumps the line.
	q2 := JobQueue{Limit: 1, Running: []string{"x"}, Waiting: []string{"y"}}
	q2.Running = nil
	if q2.Request("z") {
		t.Fatal("a newcomer ran before the job waiting in line")
	}
	var zero JobQueue
	for i := range DefaultJobLimit {
		if !zero.Request(string(rune('a' + i))) {
			t.Fatal("the default limit is not 3")
		}
	}
	if zero.Request("x") {
		t.Fatal("the default limit is not 3")
	}
}

func TestSplitByPrefixCoversEveryKeyOnce(t *testing.T) {
	keys := []string{"a", "a.txt", "a/1", "a/2", "b", "b.txt", "b/", "b/x", "c-", "c/y/z", "d/ü", "e/ü/v", "readme", "z/last"}
	prefixes := []string{"e/", "a/", "b/", "c/", "d/", "z/", "a/"}
	for n := 1; n <= 8; n++ {
		splits := SplitByPrefix(prefixes, n)
		if len(splits) > n {
			t.Fatalf("n=%d: %d splits", n, len(splits))
		}
		for _, k := range keys {
			in := 0
			for _, s := range splits {
				if s.Range.Contains(k) {
					in++
				}
			}
			if in != 1 {
				t.Fatalf("n=%d: key %q is in %d ranges: %+v", n, k, in, splits)
			}
		}
		got := 0
		for _, s := range splits {
			got += len(s.Prefixes)
			for _, p := range s.Prefixes {
				if !s.Range.Contains(p + "x") {
					t.Fatalf("n=%d: prefix %q not in its own range %v", n, p, s.Range)
				}
			}
		}
		if got != 6 {
			t.Fatalf("n=%d: %d prefixes in the splits, want 6", n, got)
		}
	}
	if s := SplitByPrefix([]string{"a/", "b/", "c/", "d/"}, 2); len(s) != 2 || len(s[0].Prefixes) != 2 || s[0].Range.Until != "c" || s[1].Range.After != "c" {
		t.Fatalf("even split: %+v", s)
	}
	if s := SplitByPrefix(nil, 3); len(s) != 1 || !s[0].Range.IsZero() {
		t.Fatalf("no prefixes: %+v", s)
	}
}
