package testenv

import (
	"strings"
	"testing"
)

// The blocks the integration CLI tests run are found wherever the
// documentation keeps them (they live in docs/operate.md, not README.md).
func TestDocCommandsFindsTheCLIBlocks(t *testing.T) {
	for name, want := range map[string]int{"publish": 3, "admit": 4} {
		lines := DocCommands(t, name)
		if len(lines) != want {
			t.Errorf("cli:%s: %d commands, want %d: %q", name, len(lines), want, lines)
		}
		for _, line := range lines {
			if !strings.HasPrefix(line, "temporal workflow ") {
				t.Errorf("cli:%s: %q is not a temporal workflow command", name, line)
			}
		}
	}
}

func TestCLIBlock(t *testing.T) {
	block := "intro\n<!-- cli:x -->\n```sh\ntemporal workflow start --type X\n  temporal workflow result -w x\necho no\n```\n<!-- /cli -->\n"
	got, err := cliBlock(map[string]string{"README.md": "nothing here", "docs/a.md": block}, "x")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"temporal workflow start --type X", "temporal workflow result -w x"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, c := range []struct {
		docs map[string]string
		want string
	}{
		{map[string]string{"README.md": "no blocks"}, "no block <!-- cli:x -->"},
		{map[string]string{"docs/a.md": block, "docs/b.md": block}, "docs/a.md and docs/b.md"},
		{map[string]string{"docs/a.md": "<!-- cli:x -->\ntemporal x\n"}, "no <!-- /cli --> end"},
		{map[string]string{"docs/a.md": "<!-- cli:x -->\necho\n<!-- /cli -->"}, "no temporal command"},
	} {
		if _, err := cliBlock(c.docs, "x"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.docs, err, c.want)
		}
	}
}
