// Package clitest checks a binary's command tree the way the issue asks
// of every binary and starter: each command's --help exits 0 with a
// synopsis and an example and shows no other command's flags, an unknown
// flag exits 2, --version prints the version, completion works, and the
// renamed flags' old names are hidden.
package clitest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/edgeflow/edgeflow/internal/cli"
)

// Shared are the only flags a command may inherit from its parents: the
// Temporal connection and --json. Anything else persistent would show in
// every subcommand's help whether it applies or not.
var Shared = []string{"address", "namespace", "profile", "config-file", "api-key", "tls", "tls-cert-path",
	"tls-key-path", "tls-ca-path", "tls-server-name", "tls-disable-host-verification", "json", "help"}

// Result is one run of a command line.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Run runs a fresh tree from newRoot on args, in process.
func Run(newRoot func() *cobra.Command, args ...string) Result {
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), newRoot(), args, &out, &errOut)
	return Result{code, out.String(), errOut.String()}
}

// Check runs every check on the tree newRoot builds (called once per run:
// commands keep their flags' values).
func Check(t *testing.T, newRoot func() *cobra.Command) {
	t.Helper()
	root := newRoot()
	var paths [][]string
	visit(root, nil, func(path []string) { paths = append(paths, path) })
	flagsOf := map[string][]string{} // command path -> its local flags
	for _, p := range paths {
		flagsOf[strings.Join(p, " ")] = localFlags(find(root, p))
	}
	for _, p := range paths {
		name := strings.TrimSpace(root.Name() + " " + strings.Join(p, " "))
		t.Run(strings.Join(append([]string{"help"}, p...), "_"), func(t *testing.T) {
			checkHelp(t, newRoot, p, name, flagsOf)
		})
		t.Run(strings.Join(append([]string{"unknown-flag"}, p...), "_"), func(t *testing.T) {
			r := Run(newRoot, append(slices.Clone(p), "--no-such-flag")...)
			if r.Code != cli.ExitUsage || !strings.Contains(r.Stderr, "unknown flag: --no-such-flag") {
				t.Errorf("%s --no-such-flag: exit %d, stderr %q; want 2 naming the flag", name, r.Code, r.Stderr)
			}
		})
	}
	t.Run("-h", func(t *testing.T) {
		if r := Run(newRoot, "-h"); r.Code != 0 || !strings.Contains(r.Stdout, "Usage:") {
			t.Errorf("%s -h: exit %d, %q", root.Name(), r.Code, r.Stdout)
		}
	})
	t.Run("version", func(t *testing.T) {
		args := []string{"--version"}
		if f := root.Flags().Lookup("version"); f != nil && f.Value.Type() != "bool" {
			args = []string{"version"} // publish's --version is the package's
		}
		r := Run(newRoot, args...)
		if r.Code != 0 || !strings.Contains(r.Stdout, cli.Version()) {
			t.Errorf("%s %s: exit %d, %q; want %q", root.Name(), args[0], r.Code, r.Stdout, cli.Version())
		}
	})
	t.Run("completion", func(t *testing.T) {
		r := Run(newRoot, "completion", "bash")
		if r.Code != 0 || !strings.Contains(r.Stdout, "bash completion") {
			t.Errorf("%s completion bash: exit %d, %.200q", root.Name(), r.Code, r.Stdout+r.Stderr)
		}
	})
}

var flagInHelp = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`)

func checkHelp(t *testing.T, newRoot func() *cobra.Command, path []string, name string, flagsOf map[string][]string) {
	t.Helper()
	r := Run(newRoot, append(slices.Clone(path), "--help")...)
	cmd := find(newRoot(), path)
	if r.Code != 0 {
		t.Fatalf("%s --help: exit %d\n%s%s", name, r.Code, r.Stdout, r.Stderr)
	}
	if cmd.Short == "" || !strings.Contains(r.Stdout, strings.TrimSpace(firstLine(cmd.Long, cmd.Short))) {
		t.Errorf("%s --help: no synopsis\n%s", name, r.Stdout)
	}
	if strings.TrimSpace(cmd.Example) == "" || !strings.Contains(r.Stdout, "Examples:") {
		t.Errorf("%s --help: no example\n%s", name, r.Stdout)
	}
	local, global := sections(r.Stdout)
	own := flagsOf[strings.Join(path, " ")]
	for _, f := range local {
		if !slices.Contains(own, f) && f != "help" && f != "version" {
			t.Errorf("%s --help lists --%s, not a flag of its own", name, f)
		}
	}
	for _, f := range global {
		if !slices.Contains(Shared, f) && f != "version" {
			t.Errorf("%s --help lists --%s as a global flag: only the connection flags and --json are shared", name, f)
		}
	}
	// What another command alone has must not show here.
	shown := append(slices.Clone(local), global...)
	for other, flags := range flagsOf {
		for _, f := range flags {
			if slices.Contains(shown, f) && !slices.Contains(own, f) && !slices.Contains(Shared, f) && f != "version" {
				t.Errorf("%s --help shows --%s of %q", name, f, other)
			}
		}
	}
	// Hidden flags (old names kept for a release) never show.
	hidden := func(f *pflag.Flag) {
		if f.Hidden && regexp.MustCompile(`--`+regexp.QuoteMeta(f.Name)+`\b`).MatchString(r.Stdout) {
			t.Errorf("%s --help shows the hidden --%s", name, f.Name)
		}
	}
	cmd.Flags().VisitAll(hidden)
	cmd.InheritedFlags().VisitAll(hidden)
}

// sections are the flag names of help's "Flags:" and "Global Flags:".
func sections(help string) (local, global []string) {
	part := func(title string) []string {
		i := strings.Index(help, "\n"+title+"\n")
		if i < 0 {
			return nil
		}
		body := help[i+len(title)+2:]
		if j := strings.Index(body, "\n\n"); j >= 0 {
			body = body[:j]
		}
		var names []string
		for _, m := range flagInHelp.FindAllStringSubmatch(body, -1) {
			names = append(names, m[1])
		}
		return names
	}
	return part("Flags:"), part("Global Flags:")
}

func localFlags(c *cobra.Command) []string {
	var names []string
	c.LocalFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}

// visit calls f with the path of every command users run: not help's,
// completion's or hidden ones.
func visit(c *cobra.Command, path []string, f func([]string)) {
	f(path)
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		visit(sub, append(slices.Clone(path), sub.Name()), f)
	}
}

func find(root *cobra.Command, path []string) *cobra.Command {
	c, _, err := root.Find(path)
	if err != nil {
		panic(err)
	}
	return c
}

func firstLine(long, short string) string {
	if long != "" {
		line, _, _ := strings.Cut(long, "\n")
		return line
	}
	return short
}

// Documented fails for each command of the tree newRoot builds that page
// (a path from the repository root, e.g. docs/migrate.md) does not name
// as "<root> <command…>", e.g. "migrate sync" or "room event add", or
// among alternatives ("room suspend|resume|delete"): a command users
// cannot find in its product's page.
func Documented(t *testing.T, newRoot func() *cobra.Command, page string) {
	t.Helper()
	root := newRoot()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), page))
	if err != nil {
		t.Fatal(err)
	}
	visit(root, nil, func(path []string) {
		if len(path) == 0 {
			return
		}
		words := append([]string{root.Name()}, path...)
		for i, w := range words {
			words[i] = regexp.QuoteMeta(w)
		}
		last := len(words) - 1
		words[last] = `(?:[\w-]+\|)*` + words[last] + `(?:\|[\w-]+)*`
		if !regexp.MustCompile(`\b` + strings.Join(words, " ") + `\b`).Match(data) {
			t.Errorf("%s does not name the command %q", page, root.Name()+" "+strings.Join(path, " "))
		}
	})
}

// repoRoot is the folder of go.mod above the test's working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}
