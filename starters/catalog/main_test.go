package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/cli/clitest"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
)

// TestMain lets the test binary run as the command itself, so the tests
// see its real stdout, stderr and exit code.
func TestMain(m *testing.M) {
	if os.Getenv("CATALOG_COMMAND") == "1" {
		os.Args = append([]string{"catalog"}, strings.Fields(os.Getenv("CATALOG_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runCommand(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, "CATALOG_COMMAND=1", "CATALOG_ARGS="+strings.Join(args, " "))...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func writeEntry(t *testing.T, name, body string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, strings.ToLower(name[:1]), name+".json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPreview runs preview against a local registry: stdout holds exactly
// the selected files as they would be published, and nothing else.
func TestPreview(t *testing.T) {
	reg := registrytest.New()
	defer reg.Close()
	files := []registrytest.Entry{
		{Name: "package.json", Body: `{}`}, {Name: "README.md", Body: "x"},
		{Name: "dist/tippy.js", Body: "a"}, {Name: "dist/tippy.min.js", Body: "a"},
		{Name: "dist/tippy.cjs.js", Body: "a"}, {Name: "dist/tippy.cjs.js.map", Body: "a"},
		{Name: "dist/themes/light.css", Body: "a"},
	}
	reg.Add("tippy.js", "6.3.7", registrytest.NPMTarball(files...))
	reg.Add("tippy.js", "6.3.6", registrytest.NPMTarball(files[:3]...))
	reg.Add("tippy.js", "7.0.0-beta.1", registrytest.NPMTarball(files[:2]...))
	dir := writeEntry(t, "tippy.js", `{"name": "tippy.js", "filename": "tippy.min.js",
  "autoupdate": {"source": "npm", "target": "tippy.js",
    "fileMap": [{"basePath": "dist", "files": ["**/!(*cjs|*es|*amd).+(js|css|map)"]}]}}`)
	env := []string{"NPM_REGISTRY=" + reg.URL}

	out, errOut, code := runCommand(t, env, "preview", "tippy.js", "--catalog", dir)
	want := "themes/light.css\ntippy.js\ntippy.min.js\n"
	if code != 0 || out != want {
		t.Errorf("preview (latest stable): exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
	}
	if !strings.Contains(errOut, "tippy.js@6.3.7: the fileMap selects 3 of the release's 7 files") {
		t.Errorf("preview stderr %q lacks the summary", errOut)
	}
	out, _, code = runCommand(t, env, "preview", "tippy.js", "--version", "6.3.6", "--catalog", dir)
	if code != 0 || out != "tippy.js\n" {
		t.Errorf("preview --version 6.3.6: exit %d, stdout %q", code, out)
	}
	// Nothing selected: nothing on stdout, the reason on stderr, exit 1.
	out, errOut, code = runCommand(t, env, "preview", "tippy.js", "--version", "7.0.0-beta.1", "--catalog", dir)
	if code != 1 || out != "" || !strings.Contains(errOut, "nothing selected") {
		t.Errorf("preview of a release it selects nothing from: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code = runCommand(t, env, "preview", "tippy.js", "--version", "9.9.9", "--catalog", dir); code != 1 || !strings.Contains(errOut, "no version 9.9.9") {
		t.Errorf("preview of a missing version: exit %d, %q", code, errOut)
	}
	if _, errOut, code = runCommand(t, env, "preview", "nope", "--catalog", dir); code != 2 || !strings.Contains(errOut, `"nope"`) {
		t.Errorf("preview of a library not in the catalog: exit %d, %q", code, errOut)
	}
	if _, _, code = runCommand(t, env, "preview"); code != 2 {
		t.Errorf("preview without a name: exit %d, want 2", code)
	}
}

// TestValidateStrict: warnings alone exit 0, --strict makes them fail.
func TestValidateStrict(t *testing.T) {
	dir := writeEntry(t, "lib", `{"name": "Lib", "autoupdate": {"source": "npm", "target": "lib",
  "fileMap": [{"basePath": "", "files": ["lib.js"]}]}}`)
	out, _, code := runCommand(t, nil, "validate", dir)
	if code != 0 || !strings.Contains(out, "warning: ") || !strings.Contains(out, "1 libraries (1 updated, 0 kept without autoupdate) from 1 files; 0 errors, 2 warnings") {
		t.Errorf("validate with warnings: exit %d, %q", code, out)
	}
	if _, _, code = runCommand(t, nil, "validate", "--strict", dir); code != 1 {
		t.Errorf("validate --strict with warnings: exit %d, want 1", code)
	}
	broken := writeEntry(t, "x", `{"autoupdate": {"source": "svn"}}`)
	if out, _, code = runCommand(t, nil, "validate", broken); code != 1 || !strings.Contains(out, "name: missing") {
		t.Errorf("validate of an entry with errors: exit %d, %q", code, out)
	}
}

func TestCommandLine(t *testing.T) {
	clitest.Check(t, newRootCommand)
	// From the process, as a script sees it: help on stdout, exit 0; no
	// command, exit 2; the old one-dash flags still work.
	if out, _, code := runCommand(t, nil, "validate", "--help"); code != 0 || !strings.Contains(out, "--strict") || strings.Contains(out, "--npm-registry") {
		t.Errorf("validate --help: exit %d\n%s", code, out)
	}
	if _, errOut, code := runCommand(t, nil); code != 2 || !strings.Contains(errOut, "a command is required") {
		t.Errorf("no command: exit %d, %q", code, errOut)
	}
	dir := writeEntry(t, "ok", `{"name": "ok", "filename": "ok.js", "autoupdate": {"source": "npm", "target": "ok", "fileMap": [{"basePath": "", "files": ["ok.js"]}]}}`)
	if out, errOut, code := runCommand(t, nil, "validate", "-json", dir); !strings.Contains(out, `"summary"`) {
		t.Errorf("validate -json: exit %d, %q, %q", code, out, errOut)
	}
}

// Every command of the starter is named in its product's page.
func TestCommandsAreDocumented(t *testing.T) {
	clitest.Documented(t, newRootCommand, "docs/publish.md")
}
