package migrate

import "testing"

func TestRampedPageSize(t *testing.T) {
	for _, c := range []struct{ seq, size, want int }{
		{0, 2000, 250}, {1, 2000, 1000}, {2, 2000, 2000}, {3, 2000, 2000}, {1000000, 2000, 2000},
		// Pages at most FirstPageSize are never ramped.
		{0, 100, 100}, {5, 100, 100}, {0, 250, 250},
		// The ramp stops at the page size, which need not be a power of two.
		{0, 300, 250}, {1, 300, 300}, {2, 300, 300},
		{0, 10000, 250}, {2, 10000, 4000}, {3, 10000, 10000},
	} {
		if got := RampedPageSize(c.seq, c.size); got != c.want {
			t.Errorf("RampedPageSize(%d, %d) = %d, want %d", c.seq, c.size, got, c.want)
		}
	}
}
