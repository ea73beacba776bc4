//go:build chaos

package chaos

import (
	"testing"

	"github.com/edgeflow/edgeflow/integration/e2echeck"
	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

// gateCookieKey makes the gates' cookie key for room s and keeps its
// reader: the test holds the key, so it reads when each visitor was
// admitted (the ticket's acceptedAt, the gate's own clock) and counts
// every admission in its minute exactly.
func gateCookieKey(t *testing.T, id string, s engine.Settings) keyring.Key {
	t.Helper()
	key, keys := newKey(t, id)
	admissionCookies = e2echeck.CookieReader{Codec: gate.Codec{Keys: keys}, Room: s.Name, Name: gate.CookieNameFor(s.CookieSuffix)}
	return key
}

// gateEnv is a chaos gate's environment: its Temporal, cookie key, origin,
// data center, id and Redis, on free ports, plus extra settings.
func gateEnv(temporalHostPort string, key keyring.Key, originURL, dataCenter, id, redisURL string, extra ...string) []string {
	return append([]string{
		"TEMPORAL_ADDRESS=" + temporalHostPort, "GATE_COOKIE_KEYS=" + key.Encode(), "LOG_FORMAT=",
		"GATE_ADDR=127.0.0.1:0", "GATE_HEALTH_ADDR=127.0.0.1:0", "GATE_ORIGIN=" + originURL,
		"GATE_HOSTS=127.0.0.1,localhost", "GATE_DATA_CENTER=" + dataCenter, "GATE_ID=" + id,
		"GATE_REDIS_URL=" + redisURL,
	}, extra...)
}
