package migrate

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// dayAge is an age in whole days or weeks ("7d", "2w"), which Go's
// durations do not spell.
var dayAge = regexp.MustCompile(`^([0-9]{1,6})([dw])$`)

// ParseFilterTime reads --modified-after and --modified-before: an RFC 3339
// time ("2026-05-01T12:00:00Z"), a date ("2026-05-01", midnight UTC), or an
// age meaning that long before now: a Go duration ("24h", "90m") or whole
// days or weeks ("7d", "2w"), to the second.
func ParseFilterTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if m := dayAge.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		days := map[string]int{"d": 1, "w": 7}[m[2]] * n
		return now.AddDate(0, 0, -days).Truncate(time.Second), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d).Truncate(time.Second), nil
	}
	return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time (2026-05-01T12:00:00Z), a date (2026-05-01) or an age (24h, 7d)", s)
}
