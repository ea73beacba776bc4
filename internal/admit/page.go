package admit

import (
	"bytes"
	"fmt"
	"time"

	"github.com/cbroglie/mustache"
)

// The bounds of a queue page. Every page, a room's or an event's, is parsed
// by ParsePage and rendered by Page.Render: nothing else in the module may
// use the Mustache library (page_test.go holds it to that), because the
// library's own parsers resolve {{> name}} partials by reading files.
const (
	// MaxRenderedPageBytes bounds a rendered page: a page over it is not served.
	MaxRenderedPageBytes = 256 << 10
	// MaxPageRenderTime bounds how long rendering a page may take.
	MaxPageRenderTime = 50 * time.Millisecond
	// MaxPageDepth bounds how deeply sections nest. The page's variables are
	// booleans, numbers and strings, so a section renders at most once and a
	// page renders in time linear in its size times its depth; the bound
	// keeps that small (the library itself accepts 10,000 levels, and
	// copies its context chain at every one).
	MaxPageDepth = 16
	// MaxPageNameLength bounds a variable's or a section's name (the
	// longest variable is 28 bytes): the library walks a dotted name one
	// recursion a dot, without writing, so the render bound cannot stop it.
	MaxPageNameLength = 64
)

// The errors a page's rendering stops with; the gate then serves its
// default page.
var (
	ErrPageTooLarge = fmt.Errorf("the rendered page exceeds %d bytes", MaxRenderedPageBytes)
	ErrPageTooSlow  = fmt.Errorf("rendering the page took over %s", MaxPageRenderTime)
)

// Page is a parsed custom_page_html: a Mustache template that can read
// nothing but the variables it is rendered with.
type Page struct{ tmpl *mustache.Template }

// noPartials is the partial provider of every page: there are none, so a
// page never reads a file (the library's default provider reads any path
// the template names, /proc/self/environ included).
type noPartials struct{}

func (noPartials) Get(name string) (string, error) {
	return "", fmt.Errorf("partial %q: pages cannot include partials", name)
}

// ParsePage parses a page, refusing partials ({{> name}}, anywhere),
// sections nested deeper than MaxPageDepth and names longer than
// MaxPageNameLength.
func ParsePage(src string) (*Page, error) {
	t, err := mustache.ParseStringPartials(src, noPartials{})
	if err != nil {
		return nil, fmt.Errorf("is not a valid Mustache template: %w", err)
	}
	if err := checkTags(t.Tags(), 1); err != nil {
		return nil, err
	}
	return &Page{tmpl: t}, nil
}

// checkPageSyntax checks a page's Mustache syntax only, as rooms did
// before pages were restricted (see RevStrictPages).
func checkPageSyntax(src string) error {
	if _, err := mustache.ParseStringPartials(src, noPartials{}); err != nil {
		return fmt.Errorf("is not a valid Mustache template: %w", err)
	}
	return nil
}

// MustParsePage parses a page built into the program.
func MustParsePage(src string) *Page {
	p, err := ParsePage(src)
	if err != nil {
		panic("admit: a built-in page does not parse: " + err.Error())
	}
	return p
}

func checkTags(tags []mustache.Tag, depth int) error {
	for _, t := range tags {
		if t.Type() == mustache.Partial {
			return fmt.Errorf("includes the partial {{> %.64s}}: pages cannot include partials", t.Name())
		}
		if len(t.Name()) > MaxPageNameLength {
			return fmt.Errorf("names a variable longer than %d bytes (%.20q...)", MaxPageNameLength, t.Name())
		}
		switch t.Type() {
		case mustache.Section, mustache.InvertedSection:
			if depth > MaxPageDepth {
				return fmt.Errorf("nests sections deeper than %d levels (at {{#%s}})", MaxPageDepth, t.Name())
			}
			if err := checkTags(t.Tags(), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// Render renders the page with vars (booleans, numbers and strings only:
// the library calls functions it finds there), stopping with
// ErrPageTooLarge once the output passes MaxRenderedPageBytes and with
// ErrPageTooSlow once now says MaxPageRenderTime has passed (nil:
// time.Now). It needs no goroutine: the bounds are checked as the library
// writes, which it does at least once per element.
func (p *Page) Render(vars map[string]any, now func() time.Time) ([]byte, error) {
	if now == nil {
		now = time.Now
	}
	w := &boundedWriter{now: now, deadline: now().Add(MaxPageRenderTime)}
	err := p.tmpl.FRender(w, vars)
	// The library drops the errors of some writes (variables), so the
	// writer's own verdict comes first.
	if w.err != nil {
		return nil, w.err
	}
	if err != nil {
		return nil, err
	}
	return w.buf.Bytes(), nil
}

// boundedWriter collects a page up to MaxRenderedPageBytes and until its deadline;
// past either it fails every write from then on.
type boundedWriter struct {
	buf      bytes.Buffer
	now      func() time.Time
	deadline time.Time
	err      error
}

func (w *boundedWriter) Write(b []byte) (int, error) {
	switch {
	case w.err != nil:
	case w.buf.Len()+len(b) > MaxRenderedPageBytes:
		w.err = ErrPageTooLarge
	case w.now().After(w.deadline):
		w.err = ErrPageTooSlow
	default:
		return w.buf.Write(b)
	}
	return 0, w.err
}
