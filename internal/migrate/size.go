package migrate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize reads a byte count: a number with an optional unit, binary
// (KiB, MiB, GiB, TiB, or K, M, G, T) or B. "64MiB", "5G" and "1048576" are
// all sizes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"TB", 1 << 40},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	// NaN, infinities and sizes past int64 would convert to nonsense
	// (a negative size): refused like any other bad number.
	if err != nil || !(n >= 0) || n*float64(mult) >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: want a number with an optional unit (KiB, MiB, GiB), below 8 EiB", s)
	}
	return int64(n * float64(mult)), nil
}
