//go:build chaos

package chaos

import (
	"testing"

	"github.com/edgeflow/edgeflow/internal/keyring"
)

// newKey generates a key named id and the keyring holding it alone: the
// key for a process's environment, the ring to read what it sealed.
func newKey(t *testing.T, id string) (keyring.Key, *keyring.Keyring) {
	t.Helper()
	key, err := keyring.Generate(id)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := keyring.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return key, keys
}
