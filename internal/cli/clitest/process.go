package clitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// mainArgs, when set, holds the command line the test binary runs main
// with (JSON, so arguments keep their spaces).
const mainArgs = "CLITEST_MAIN_ARGS"

// Main is a TestMain that lets the test binary run as the command named
// name: Exec runs it so, and sees the real stdout, stderr and exit code
// (output written to os.Stdout, exits past or after deferred calls).
func Main(m *testing.M, name string, main func()) {
	if v, ok := os.LookupEnv(mainArgs); ok {
		var args []string
		if err := json.Unmarshal([]byte(v), &args); err != nil {
			panic(err)
		}
		os.Args = append([]string{name}, args...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Exec runs the command (see Main) on args, with env added to the
// environment.
func Exec(t *testing.T, env []string, args ...string) Result {
	t.Helper()
	encoded, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env...), mainArgs+"="+string(encoded))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	r := Result{}
	var exit *exec.ExitError
	if err := cmd.Run(); errors.As(err, &exit) {
		r.Code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	r.Stdout, r.Stderr = out.String(), errOut.String()
	return r
}
