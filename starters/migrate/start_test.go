package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// jobFlagsOf parses start's flags as the command line would.
func jobFlagsOf(t *testing.T, args ...string) *jobFlags {
	t.Helper()
	fs := pflag.NewFlagSet("start", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f jobFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &f
}

// Bad sizes and a key list with a source prefix are refused, naming the flag.
func TestStartRefusesSizesAndPrefixedKeyLists(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keys, []byte("a.js\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"--source-endpoint", "s:9000", "--dest", "s3://dst", "--dest-endpoint", "d:9000"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--source", "s3://src", "--part-size", "1048576T"}, "--part-size"},
		{[]string{"--source", "s3://src", "--part-size", "6GiB"}, "at most 5 GiB"},
		{[]string{"--source", "s3://src", "--part-size", "99999999999999999999T"}, "--part-size"},
		{[]string{"--source", "s3://src", "--multipart-cutoff", "9223372036854775807"}, "--multipart-cutoff"},
		{[]string{"--source", "s3://src/p/", "--keys", keys}, "--keys"},
	} {
		f := jobFlagsOf(t, append(base, tc.args...)...)
		_, problems := f.input("m-test")
		if got := strings.Join(problems, "\n"); !strings.Contains(got, tc.want) {
			t.Errorf("%v: problems %q, want one naming %q", tc.args, got, tc.want)
		}
	}
	// The same key list without a prefix passes these checks.
	f := jobFlagsOf(t, append(base, "--source", "s3://src", "--keys", keys, "--part-size", "5GiB")...)
	_, problems := f.input("m-test")
	if got := strings.Join(problems, "\n"); strings.Contains(got, "--keys") || strings.Contains(got, "part size") {
		t.Errorf("a valid job: %q", got)
	}
}
