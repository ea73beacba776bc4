package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/cli/clitest"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

func TestFlagsAreCheckedWithClearMessages(t *testing.T) {
	t.Setenv("GATE_HOSTS", "*")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--origin (env GATE_ORIGIN) is required"},
		{[]string{"--origin", "http://o", "--data-center", "a b"}, `--data-center "a b"`},
		{[]string{"--origin", "http://o", "--gate-id", "x/y"}, `--gate-id "x/y"`},
		{[]string{"--origin", "http://o", "--https-cert", "c.pem"}, "--https-cert and --https-key go together"},
		{[]string{"--origin", "http://o", "--max-body-bytes", "0"}, "must be positive"},
		{[]string{"--origin", "http://o", "extra"}, "unexpected arguments"},
		{[]string{"--origin", "http://o", "--hosts", "shop.example.com:8088"}, `--hosts (env GATE_HOSTS): "shop.example.com:8088": no port`},
		{[]string{"--origin", "http://o", "--strategy", "even"}, `--strategy "even" (env GATE_STRATEGY): must be one of counters, counters+borrow`},
		{[]string{"--origin", "http://o", "--strategy", "counters+borrow"}, "needs --redis-url"},
		{[]string{"--origin", "http://o", "--strategy", "counters+borrow", "--redis-url", "redis://a:6379/0", "--anywhere-redis-url", "redis://b:6379/0"},
			"no other --anywhere-redis-url"},
	} {
		_, err := parseFlags(c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}

// A gate is told which hosts it serves, or that every host is meant: one
// that took every Host while a room names one let any other Host past the
// room. Without --hosts it exits 2 naming the flag, before it starts.
func TestHostsAreRequired(t *testing.T) {
	if os.Getenv("GATE_MAIN") != "" {
		os.Args = append([]string{"gate"}, strings.Fields(os.Getenv("GATE_MAIN"))...)
		main()
		return
	}
	t.Setenv("GATE_HOSTS", "")
	for _, hosts := range []string{"", " , "} {
		_, err := parseFlags([]string{"--origin", "http://o", "--hosts", hosts}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--hosts (env GATE_HOSTS)") || !strings.Contains(err.Error(), `"*" for every host`) {
			t.Errorf("--hosts %q: %v, want an error naming --hosts and '*'", hosts, err)
		}
	}
	if s, err := parseFlags([]string{"--origin", "http://o", "--hosts", "*"}, io.Discard); err != nil || s.Hosts != "*" {
		t.Errorf("--hosts '*': %v", err)
	}
	if _, err := parseFlags([]string{"--origin", "http://o", "--hosts", "*,shop.example.com"}, io.Discard); err == nil {
		t.Error("--hosts '*,shop.example.com' accepted: '*' goes alone")
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestHostsAreRequired$")
	cmd.Env = append(os.Environ(), "GATE_MAIN=--origin http://127.0.0.1:1", "GATE_HOSTS=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "gate: --hosts (env GATE_HOSTS)") {
		t.Errorf("gate without --hosts: %v, stderr %q; want exit 2 naming --hosts", err, stderr.String())
	}
}

// The settings the issue names come from the environment as well as flags.
func TestSettingsFromTheEnvironment(t *testing.T) {
	t.Setenv("GATE_ORIGIN", "http://origin:3000")
	t.Setenv("GATE_DATA_CENTER", "fra")
	t.Setenv("GATE_REDIS_URL", "redis://r:6379/0")
	t.Setenv("GATE_STRATEGY", "counters+borrow")
	t.Setenv("GATE_HOSTS", "Shop.example.com, 127.0.0.1")
	s, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s.Origin != "http://origin:3000" || s.DataCenter != "fra" || s.Strategy != "counters+borrow" || s.Addr != "127.0.0.1:8088" ||
		s.Hosts != "Shop.example.com, 127.0.0.1" {
		t.Errorf("from the environment: %+v", s)
	}
	// A flag wins over its variable.
	if s, err := parseFlags([]string{"--data-center", "ams", "--strategy", "counters"}, io.Discard); err != nil || s.DataCenter != "ams" || s.Strategy != "counters" {
		t.Errorf("flags over the environment: %+v, %v", s, err)
	}
}

// runKeygen is `gate keygen args…`, as main runs it.
func runKeygen(stdout io.Writer, args ...string) error {
	root := newRootCommand(stdout, io.Discard, nil)
	if code := cli.Run(context.Background(), root, append([]string{"keygen"}, args...), stdout, io.Discard); code != cli.ExitOK {
		return fmt.Errorf("exit status %d", code)
	}
	return nil
}

// Help with examples, own flags only (keygen's --file is not the gate's),
// the ops address under its one name (--health-addr still sets it,
// hidden), unknown flags refused with 2.
func TestCommandLine(t *testing.T) {
	clitest.Check(t, func() *cobra.Command { return newRootCommand(io.Discard, io.Discard, nil) })
	t.Setenv("GATE_HOSTS", "*")
	for _, name := range []string{"--ops-addr", "--health-addr"} {
		if s, err := parseFlags([]string{"--origin", "http://o", name, "127.0.0.1:8098"}, io.Discard); err != nil || s.HealthAddr != "127.0.0.1:8098" {
			t.Errorf("%s: %+v, %v", name, s, err)
		}
	}
}

func TestKeygen(t *testing.T) {
	var out bytes.Buffer
	if err := runKeygen(&out, "--id", "gate-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := keyring.Parse(out.String()); err != nil || !strings.HasPrefix(out.String(), "gate-a:") {
		t.Fatalf("keygen printed %q: %v", out.String(), err)
	}
	path := filepath.Join(t.TempDir(), "keys", "gate-cookie.keys")
	out.Reset()
	if err := runKeygen(&out, "--file", path); err != nil || !strings.HasPrefix(out.String(), "created") {
		t.Fatalf("keygen --file: %q %v", out.String(), err)
	}
	first, _ := os.ReadFile(path)
	out.Reset()
	if err := runKeygen(&out, "--file", path); err != nil || !strings.HasPrefix(out.String(), "kept") {
		t.Fatalf("keygen --file again: %q %v", out.String(), err)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(first, again) {
		t.Error("a second keygen --file replaced the key: every visitor would be logged out")
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode: %v %v", st.Mode(), err)
	}
	if _, err := keyring.LoadFile(path); err != nil {
		t.Error(err)
	}
}
