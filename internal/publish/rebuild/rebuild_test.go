package rebuild

import "testing"

func TestTwinsAndNames(t *testing.T) {
	for p, want := range map[string]string{"a.js.br": "a.js", "dir/a.css.gz": "dir/a.css", "a.js": "", ".br": "", "dir/.gz": ""} {
		base, twin := twinOf(p)
		if twin != (want != "") || base != want {
			t.Errorf("twinOf(%q) = %q, %v; want %q", p, base, twin, want)
		}
	}
	for name, ok := range map[string]bool{"jquery": true, "lib-a": true, "Chart.js": true, "a_b": true, "not a lib!": false, ".hidden": false, "": false} {
		if packageName.MatchString(name) != ok {
			t.Errorf("package name %q: %v, want %v", name, !ok, ok)
		}
	}
}
