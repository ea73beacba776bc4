package cli

import (
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// Not a terminal: plain lines, at most one per Every plus the last one; no
// carriage returns or escape codes; no rate until the readings span 2 s.
func TestProgressInALogFile(t *testing.T) {
	var out strings.Builder
	c := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	no := false
	p := &Progress{Out: &out, Label: "publish/mitt@3.0.1", Unit: "files", Every: 10 * time.Second, Terminal: &no, Now: c.now}
	for i := 0; i < 60; i++ { // a reading every 500 ms for 30 s
		p.Update(i*10, 600, "")
		c.t = c.t.Add(500 * time.Millisecond)
	}
	p.Done()
	text := out.String()
	if strings.ContainsAny(text, "\r\033") {
		t.Fatalf("redraws in a log file:\n%q", text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 4 || !strings.Contains(lines[3], "590/600") { // at 0, 10 and 20 s, and the last status
		t.Fatalf("%d lines, want 4 ending at 590/600:\n%s", len(lines), text)
	}
	if !strings.Contains(lines[0], "0/600 files  measuring rate…") || strings.Contains(lines[0], "/s") {
		t.Errorf("first line %q: no rate yet", lines[0])
	}
	if !strings.Contains(lines[1], "200/600 files  20.0 files/s  ETA 20s") {
		t.Errorf("second line %q", lines[1])
	}
	if !strings.HasPrefix(lines[0], "12:00:00 publish/mitt@3.0.1 [") {
		t.Errorf("line %q", lines[0])
	}
}

// A terminal: one line redrawn in place at every update, finished by Done.
func TestProgressOnATerminal(t *testing.T) {
	var out strings.Builder
	c := &clock{t: time.Now()}
	yes := true
	p := &Progress{Out: &out, Label: "job", Terminal: &yes, Now: c.now}
	p.Update(1, 4, "")
	c.t = c.t.Add(time.Millisecond)
	p.Update(2, 4, "x")
	p.Done()
	text := out.String()
	if strings.Count(text, "\r\033[K") != 2 || !strings.HasSuffix(text, "\n") || strings.Count(text, "\n") != 1 {
		t.Errorf("%q", text)
	}
	if strings.Contains(text, "/s") {
		t.Errorf("a rate from readings 1 ms apart: %q", text)
	}
}
