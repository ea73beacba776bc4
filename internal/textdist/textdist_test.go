package textdist

import "testing"

func TestDistance(t *testing.T) {
	cases := []struct {
		a, b    string
		k, want int
	}{
		{"", "", 5, 0},
		{"abc", "abc", 5, 0},
		{"ca", "ac", 5, 1}, // a transposition is one edit
		{"jquery", "jqeury", 5, 1},
		{"kitten", "sitting", 5, 3},
		{"abc", "", 5, 3},
		{"fileMaps", "fileMap", 5, 1},
		{"kitten", "sitting", 2, 3}, // beyond k: gives up with k+1
		{"completely", "different", 1, 2},
	}
	for _, c := range cases {
		if got := Distance(c.a, c.b, c.k); got != c.want {
			t.Errorf("Distance(%q, %q, %d) = %d, want %d", c.a, c.b, c.k, got, c.want)
		}
	}
}
