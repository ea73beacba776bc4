package console

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/edgeflow/edgeflow/internal/devstack"
)

// axeVersion pins axe-core, so a new release's rules do not change what
// this test asserts under it.
const axeVersion = "4.10.3"

// axeSource is axe-core's browser build, installed from npm once into the
// repository's .data (like the dev stack's other downloads) and reused.
func axeSource(t *testing.T) string {
	t.Helper()
	root, err := devstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ".data", "npm", "axe-core-"+axeVersion)
	file := filepath.Join(dir, "node_modules", "axe-core", "axe.min.js")
	if _, err := os.Stat(file); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatal("the accessibility check needs npm to install axe-core (`apt-get install -y npm`)")
		}
		cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", dir, "axe-core@"+axeVersion)
		cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(root, ".data", "npm", "cache"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm install axe-core@%s: %v\n%s", axeVersion, err, out)
		}
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// theme switches the page's prefers-color-scheme.
func theme(t *testing.T, ctx context.Context, scheme string) {
	t.Helper()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
		t.Fatal(err)
	}
}

type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// checkAccessible runs axe-core on the page in the browser, in the light
// and the dark theme, fails on any serious or critical violation, and
// saves a screenshot of each theme as name-light.png and name-dark.png.
func checkAccessible(t *testing.T, ctx context.Context, axe, artifacts, name string) {
	t.Helper()
	for _, scheme := range []string{"light", "dark"} {
		theme(t, ctx, scheme)
		loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof axe !== "undefined"`))
		if err != nil {
			t.Fatal(err)
		}
		if !loaded {
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](axe+"\n;true")); err != nil {
				t.Fatalf("inject axe-core: %v", err)
			}
		}
		// Colour contrast is computed from the styles in effect, so the
		// theme's own colours are what is checked.
		for _, v := range runAxe(t, ctx) {
			t.Errorf("%s, %s theme: axe %s (%s): %s\n  %s", name, scheme, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n  "))
		}
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(artifacts, name+"-"+scheme+".png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	theme(t, ctx, "light")
}

// runAxe runs axe-core (injected) on the page and returns its serious and
// critical violations.
func runAxe(t *testing.T, ctx context.Context) []axeViolation {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(
		r.violations.filter(v => v.impact === "serious" || v.impact === "critical").map(v => ({
			id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ") + " " + n.failureSummary)}))))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe: %v", err)
	}
	var found []axeViolation
	if err := json.Unmarshal([]byte(out), &found); err != nil {
		t.Fatalf("axe's answer %q: %v", out, err)
	}
	return found
}

// axeCatches shows the check can fail: an input without a label, added to
// the page for a moment, is a critical violation axe reports.
func axeCatches(t *testing.T, ctx context.Context) {
	t.Helper()
	add := `(() => { const i = document.createElement("input"); i.id = "axe-canary"; document.body.appendChild(i); return true })()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](add)); err != nil {
		t.Fatal(err)
	}
	found := runAxe(t, ctx)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.getElementById("axe-canary").remove(), true)`)); err != nil {
		t.Fatal(err)
	}
	for _, v := range found {
		if v.ID == "label" {
			return
		}
	}
	t.Fatalf("axe did not report an unlabelled input (found %+v): the accessibility check checks nothing", found)
}

// artifactsDir is where the screenshots go: $ARTIFACTS_DIR/console, or a
// directory kept after the test, logged.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := ""
	if base := os.Getenv("ARTIFACTS_DIR"); base != "" {
		dir = filepath.Join(base, "console")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	} else {
		var err error
		if dir, err = os.MkdirTemp("", "console-screenshots-"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots of both themes: %s", dir)
	return dir
}
