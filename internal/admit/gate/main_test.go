package gate

import (
	"testing"

	"github.com/edgeflow/edgeflow/internal/testenv"
)

// env holds a real Redis for the counter tests (nil with -short).
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Redis: true}, &env)
}
