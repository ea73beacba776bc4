package migrate

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strings"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// sizeNumber is what ParseSize accepts before the unit: digits with an
// optional fraction, no sign or exponent.
var sizeNumber = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// ParseSize reads a byte count: a number with an optional unit, binary
// (KiB, MiB, GiB, TiB, or K, M, G, T) or B. "64MiB", "5G" and "1048576" are
// all sizes. The arithmetic is exact (rationals), so no size wraps around:
// anything of 8 EiB or more is refused, not turned into a small number.
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
	bad := fmt.Errorf("size %q: want a number with an optional unit (KiB, MiB, GiB, TiB), below 8 EiB", s)
	if !sizeNumber.MatchString(t) || len(t) > 64 {
		return 0, bad
	}
	r, ok := new(big.Rat).SetString(t)
	if !ok {
		return 0, bad
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	n := new(big.Int).Quo(r.Num(), r.Denom()) // whole bytes, rounded down
	if !n.IsInt64() || n.Int64() == math.MaxInt64 {
		return 0, bad
	}
	return n.Int64(), nil
}

// PartSizeFor is the part size a multipart copy of an object of size bytes
// uses: partSize, or — when that would take more than S3's 10,000 parts —
// the smallest whole number of MiB that fits them (raised then says so).
// Every step is overflow-safe; an object that needs parts above S3's 5 GiB
// is an error.
func PartSizeFor(size, partSize int64) (eff int64, raised bool, err error) {
	if partSize < objectstore.MinPartSize || partSize > objectstore.MaxPartSize {
		return 0, false, fmt.Errorf("part size %d: %w", partSize, errPartSizeRange)
	}
	if size <= 0 || (size-1)/partSize < objectstore.MaxParts {
		return partSize, false, nil
	}
	need := (size-1)/objectstore.MaxParts + 1 // ceil(size / MaxParts), no overflow
	const mib = 1 << 20
	need = (need + mib - 1) / mib * mib
	if need > objectstore.MaxPartSize {
		return 0, false, fmt.Errorf("an object of %d bytes needs more than %d parts of at most 5 GiB: %w",
			size, objectstore.MaxParts, objectstore.ErrTooLarge)
	}
	return need, true, nil
}

var errPartSizeRange = fmt.Errorf("S3 parts are 5 MiB to 5 GiB: %w", objectstore.ErrInvalid)
