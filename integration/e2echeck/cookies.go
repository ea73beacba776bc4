package e2echeck

import (
	"net/http"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit/gate"
)

// CookieReader opens the gates' cookies for a test, to time admissions by
// what the gate sealed in them.
type CookieReader struct {
	Codec      gate.Codec
	Room, Name string
}

// AcceptedAt is when the cookie a gate set says its bearer was admitted
// (zero if it set none, or the reader has no keys).
func (c CookieReader) AcceptedAt(resp *http.Response) time.Time {
	for _, ck := range resp.Cookies() {
		if ck.Name != c.Name || c.Codec.Keys == nil {
			continue
		}
		if opened, _, err := c.Codec.Open(ck.Value, c.Room, time.Now()); err == nil && opened.Admitted() {
			return time.UnixMilli(opened.AcceptedAt)
		}
	}
	return time.Time{}
}
