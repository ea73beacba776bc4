package testenv

import (
	"testing"
	"time"
)

// Eventually polls check every interval until it reports done, failing the
// test with check's last word after within: tests wait for what is
// eventually consistent instead of sleeping a guess.
func Eventually(t testing.TB, within, every time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, last := check()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (%s)", what, within, last)
		}
		time.Sleep(every)
	}
}
