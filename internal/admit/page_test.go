package admit

import (
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cbroglie/mustache"
)

// pageVars are variables as the gate renders a page with.
func pageVars() map[string]any {
	return map[string]any{
		"inWaitingRoom": true, "waitTimeKnown": true, "waitTime": 12, "waitTimeFormatted": "12 minutes",
		"lastUpdated": "2026-12-01T12:00:00.000Z", "queueingMethod": "fifo", "isFIFOQueue": true,
		"isRandomQueue": false, "refreshIntervalSeconds": 20, "isEventActive": false,
	}
}

// secretFile writes a file a hostile page may name, and returns its path
// and content.
func secretFile(t testing.TB) (string, string) {
	path := filepath.Join(t.TempDir(), "secret")
	const secret = "GATE_COOKIE_KEYS=k1:c2VjcmV0"
	if err := os.WriteFile(path, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, secret
}

// A page naming a partial is refused when saved, by the settings and by an
// event, naming custom_page_html, wherever the partial hides; the page
// never shows the file's content.
func TestPageWithPartialIsRefused(t *testing.T) {
	path, secret := secretFile(t)
	for _, page := range []string{
		"{{> " + path + "}}",
		"<p>{{#inWaitingRoom}}{{> " + path + "}}{{/inWaitingRoom}}</p>",
		"{{^queueAll}}{{#waitTimeKnown}}{{>" + path + "}}{{/waitTimeKnown}}{{/queueAll}}",
		"{{=<% %>=}}<%> " + path + "%>",
		"{{> /dev/zero}}",
		"{{> /" + strings.Repeat("long/", 20) + "environ}}",
	} {
		_, err := ParsePage(page)
		if err == nil || !strings.Contains(err.Error(), "partial") {
			t.Errorf("%q parses: %v", page, err)
		}
		s := Settings{Name: "shop", TotalActiveUsers: 5, NewUsersPerMinute: 5, CustomPageHTML: page}.WithDefaults()
		if f := firstProblem(s.Validate()); f == nil || f.Field != "custom_page_html" || strings.Contains(f.Reason, secret) {
			t.Errorf("settings with %q: %v", page, s.Validate())
		}
		e := Event{Name: "launch", EventStartTime: t0.Add(time.Hour), EventEndTime: t0.Add(2 * time.Hour), CustomPageHTML: &page}
		if f := firstProblem(ValidateEvent(e, s.WithDefaults(), nil, t0)); f == nil || f.Field != "custom_page_html" {
			t.Errorf("event with %q: %v", page, f)
		}
	}
}

// stillClock keeps renders from timing anything: tests never time things.
func stillClock() time.Time { return t0 }

func firstProblem(err error) *FieldError {
	var inv *InvalidError
	if errors.As(err, &inv) && len(inv.Problems) > 0 {
		return inv.First()
	}
	return nil
}

// Even a template that got past the check has no partial to read:
// rendering it fails instead of showing the file.
func TestPageHasNoPartialProvider(t *testing.T) {
	path, secret := secretFile(t)
	tmpl, err := mustache.ParseStringPartials("a{{#inWaitingRoom}}{{> "+path+"}}{{/inWaitingRoom}}b", noPartials{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := tmpl.FRender(&out, pageVars()); err == nil || strings.Contains(out.String(), secret) {
		t.Errorf("rendered %q, %v", out.String(), err)
	}
}

// Sections nest at most MaxPageDepth deep.
func TestPageDepth(t *testing.T) {
	nested := func(n int) string {
		return strings.Repeat("{{#inWaitingRoom}}", n) + "x" + strings.Repeat("{{/inWaitingRoom}}", n)
	}
	p, err := ParsePage(nested(MaxPageDepth))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := p.Render(pageVars(), stillClock); err != nil || string(out) != "x" {
		t.Errorf("%d levels render %q, %v", MaxPageDepth, out, err)
	}
	if _, err := ParsePage(nested(MaxPageDepth + 1)); err == nil || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("%d levels: %v", MaxPageDepth+1, err)
	}
	s := Settings{Name: "shop", TotalActiveUsers: 5, NewUsersPerMinute: 5, CustomPageHTML: "{{=< >=}}" + strings.Repeat("<#.>", 8000) + strings.Repeat("</.>", 8000)}.WithDefaults()
	if f := firstProblem(s.Validate()); f == nil || f.Field != "custom_page_html" {
		t.Errorf("8,000 levels: %v", s.Validate())
	}
}

// amplifier is the page of at most MaxCustomPageSize that renders the most:
// one-character delimiters and a variable of 24 bytes behind every three.
func amplifier() string {
	head, tail := "{{=< >=}}<#lastUpdated>", "</lastUpdated>"
	return head + strings.Repeat("<.>", (MaxCustomPageSize-len(head)-len(tail))/3) + tail
}

// A page that would render over MaxRenderedPageBytes stops there, whatever its
// size when saved.
func TestPageOutputIsBounded(t *testing.T) {
	page := amplifier()
	s := Settings{Name: "shop", TotalActiveUsers: 5, NewUsersPerMinute: 5, CustomPageHTML: page}.WithDefaults()
	if err := s.Validate(); err != nil {
		t.Fatalf("the amplifier is a valid page: %v", err)
	}
	p := MustParsePage(page)
	if out, err := p.Render(pageVars(), stillClock); !errors.Is(err, ErrPageTooLarge) || out != nil {
		t.Errorf("the amplifier renders %d bytes, %v", len(out), err)
	}
	// Just under the bound it renders.
	under := "{{=< >=}}<#lastUpdated>" + strings.Repeat("<.>", MaxRenderedPageBytes/24) + "</lastUpdated>"
	if out, err := MustParsePage(under).Render(pageVars(), stillClock); err != nil || len(out) != MaxRenderedPageBytes/24*24 {
		t.Errorf("under the bound: %d bytes, %v", len(out), err)
	}
}

// Rendering stops once the clock says MaxPageRenderTime has passed.
func TestPageRenderTimeIsBounded(t *testing.T) {
	clock := t0
	tick := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	var b strings.Builder
	for i := range 100 {
		b.WriteString("<p>" + strconv.Itoa(i) + " {{waitTimeFormatted}}</p>")
	}
	out, err := MustParsePage(b.String()).Render(pageVars(), tick)
	if !errors.Is(err, ErrPageTooSlow) || out != nil {
		t.Errorf("a render 1 ms a write: %d bytes, %v", len(out), err)
	}
	// A still clock never stops it.
	if out, err := MustParsePage(b.String()).Render(pageVars(), stillClock); err != nil || !strings.Contains(string(out), "<p>99 12 minutes</p>") {
		t.Errorf("a still clock: %v", err)
	}
}

// Nothing in the module parses or renders Mustache but this package's
// page.go (and its test): the library's own parsers read partials from
// files.
func TestOnlyPageUsesMustache(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, f := range []string{"page.go", "page_test.go"} {
		abs, _ := filepath.Abs(f)
		allowed[abs] = true
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if strings.Contains(imp.Path.Value, "mustache") {
				if abs, _ := filepath.Abs(path); !allowed[abs] {
					t.Errorf("%s imports %s: parse pages with admit.ParsePage", path, imp.Path.Value)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fileMarker in a fuzzed page stands for the path of an existing file.
const fileMarker = "@FILE@"

// recordingPartials records the partials a template asks for, reading none.
type recordingPartials struct{ asked []string }

func (r *recordingPartials) Get(name string) (string, error) {
	r.asked = append(r.asked, name)
	return "", nil
}

// Any template: a page that parses is a valid custom_page_html (up to its
// size) and one that does not is refused naming the field; a template that
// would ask for a partial does not parse; a rendered page is at most
// MaxRenderedPageBytes and never holds a file's content, even the file it names.
func FuzzPage(f *testing.F) {
	for _, seed := range []string{
		"<p>{{waitTime}} minutes</p>",
		"{{#isEventActive}}<p>{{timeUntilEventEndFormatted}}</p>{{/isEventActive}}{{^isEventActive}}<p>soon</p>{{/isEventActive}}",
		"{{> " + fileMarker + "}}",
		"{{#inWaitingRoom}}{{> " + fileMarker + "}}{{/inWaitingRoom}}",
		"{{=<% %>=}}<%> " + fileMarker + "%>",
		"{{=< >=}}<#lastUpdated><.><.><.><.></lastUpdated>",
		"{{#.}}{{#.}}{{#.}}{{.}}{{/.}}{{/.}}{{/.}}",
		"{{{waitTimeFormatted}}}{{&lastUpdated}}{{a.b.c}}",
		"{{#waitTime}}", "{{/x}}", "{{", "}}{{!comment}}",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	const secret = "GATE_COOKIE_KEYS=k1:c2VjcmV0"
	file := filepath.Join(dir, "environ")
	if err := os.WriteFile(file, []byte(secret), 0o600); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if strings.Contains(src, secret) {
			return
		}
		src = strings.ReplaceAll(src, fileMarker, file)
		page, err := ParsePage(src)
		s := Settings{Name: "shop", TotalActiveUsers: 5, NewUsersPerMinute: 5, CustomPageHTML: src}.WithDefaults()
		verr := s.Validate()
		if err != nil {
			if f := firstProblem(verr); f == nil || f.Field != "custom_page_html" || strings.Contains(f.Reason, secret) {
				t.Fatalf("a page that does not parse (%v) is not refused as custom_page_html: %v", err, verr)
			}
			return
		}
		if len(src) <= MaxCustomPageSize && verr != nil {
			t.Fatalf("a page that parses is refused: %v", verr)
		}
		// Rendered by the library's own means, would it ask for a partial?
		var probe recordingPartials
		if raw, err := mustache.ParseStringPartials(src, &probe); err == nil {
			_ = raw.FRender(&boundedWriter{now: time.Now, deadline: time.Now().Add(time.Second)}, pageVars())
			if len(probe.asked) > 0 {
				t.Fatalf("a page asking for the partials %q parses", probe.asked)
			}
		}
		out, err := page.Render(pageVars(), nil)
		switch {
		case errors.Is(err, ErrPageTooLarge) || errors.Is(err, ErrPageTooSlow):
			if out != nil {
				t.Fatalf("a page over a bound rendered %d bytes", len(out))
			}
		case err != nil:
			t.Fatalf("render: %v", err)
		case len(out) > MaxRenderedPageBytes:
			t.Fatalf("rendered %d bytes", len(out))
		case strings.Contains(string(out), secret):
			t.Fatalf("the page shows the file: %q", out)
		}
	})
}

// A room replaying a run begun before pages were restricted applies a page
// with a partial, as it did; its checks of new changes still refuse it.
func TestLegacyPagesApplyOnlyWhatHistoryHolds(t *testing.T) {
	page := "{{#inWaitingRoom}}{{> x}}{{/inWaitingRoom}}"
	s := Settings{Name: "shop", TotalActiveUsers: 5, NewUsersPerMinute: 5, CustomPageHTML: page}
	if _, err := NewRoom(s, 60, t0); firstProblem(err) == nil {
		t.Fatalf("NewRoom took the page: %v", err)
	}
	r, err := NewRoomAt(s, 60, t0, RevStrictPages-1)
	if err != nil || r.Rev != RevStrictPages-1 {
		t.Fatalf("a legacy room: %v", err)
	}
	if f := firstProblem(r.CheckSettings(s, 0)); f == nil || f.Field != "custom_page_html" {
		t.Errorf("CheckSettings: %v", f)
	}
	if _, err := r.SetSettings(s, 0, t0.Add(time.Second)); err != nil {
		t.Errorf("SetSettings in a legacy room: %v", err)
	}
	e := Event{Name: "launch", EventStartTime: t0.Add(time.Hour), EventEndTime: t0.Add(2 * time.Hour), CustomPageHTML: &page}
	if f := firstProblem(r.CheckEvent(e, t0)); f == nil || f.Field != "custom_page_html" {
		t.Errorf("CheckEvent: %v", f)
	}
	if _, err := r.AddEvent(e, t0.Add(2*time.Second)); err != nil {
		t.Errorf("AddEvent in a legacy room: %v", err)
	}
	if err := r.Recreate(s, t0.Add(3*time.Second)); err != nil || r.Rev != RevStrictPages-1 {
		t.Errorf("Recreate in a legacy room: %v (revision %d)", err, r.Rev)
	}
	broken := "{{#a}}"
	if _, err := r.AddEvent(Event{Name: "bad", EventStartTime: t0.Add(time.Hour), EventEndTime: t0.Add(2 * time.Hour), CustomPageHTML: &broken}, t0.Add(4*time.Second)); firstProblem(err) == nil {
		t.Errorf("a legacy room took a page that does not parse: %v", err)
	}
}
