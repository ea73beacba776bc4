package migrate

import (
	"errors"
	"math"
	"testing"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// Sizes are exact: a float would round 2^53+1 and let a product wrap.
func TestParseSizeIsExact(t *testing.T) {
	for in, want := range map[string]int64{"9007199254740993": 1<<53 + 1, "1048576T": 1 << 60, "0.5KiB": 512, "9223372036854775806": math.MaxInt64 - 1} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"8388608T", "9223372036854775807", "99999999999999999999", "1e3", "0x10", "+5M", "1/2G"} {
		if n, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, accepted", bad, n)
		}
	}
}

func TestPartSizeFor(t *testing.T) {
	const mib, gib, tib = 1 << 20, 1 << 30, 1 << 40
	for _, tc := range []struct {
		size, part, want int64
		raised           bool
	}{
		{100 * mib, 16 * mib, 16 * mib, false},
		{10000 * 16 * mib, 16 * mib, 16 * mib, false}, // exactly 10,000 parts
		{10000*16*mib + 1, 16 * mib, 17 * mib, true},  // one byte more: a larger part
		{5 * tib, 16 * mib, 525 * mib, true},          // S3's largest object
		{0, 5 * gib, 5 * gib, false},
	} {
		got, raised, err := PartSizeFor(tc.size, tc.part)
		if err != nil || got != tc.want || raised != tc.raised {
			t.Errorf("PartSizeFor(%d, %d) = %d, %v, %v; want %d, %v", tc.size, tc.part, got, raised, err, tc.want, tc.raised)
		}
		if err == nil && tc.size > 0 && (tc.size-1)/got+1 > objectstore.MaxParts {
			t.Errorf("PartSizeFor(%d, %d) = %d: %d parts", tc.size, tc.part, got, (tc.size-1)/got+1)
		}
	}
	// What once wrapped around to 0 (1048576T times 10,000), and the
	// extremes, are errors, never a part size out of S3's range.
	for _, tc := range [][2]int64{{5 * gib, 1 << 60}, {5 * gib, 0}, {5 * gib, -1}, {5 * gib, 4 * mib}, {math.MaxInt64, 16 * mib}, {5*gib*10000 + 1, 5 * gib}} {
		if got, _, err := PartSizeFor(tc[0], tc[1]); err == nil {
			t.Errorf("PartSizeFor(%d, %d) = %d, want an error", tc[0], tc[1], got)
		}
	}
	if _, _, err := PartSizeFor(math.MaxInt64, 16*mib); !errors.Is(err, objectstore.ErrTooLarge) {
		t.Errorf("an object beyond any part size: %v, want ErrTooLarge", err)
	}
}
