package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// IsTerminal reports whether w is a terminal (a character device).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// DefaultLineEvery is how often Live writes a line when its output is not a
// terminal: a log file gets a line every 10 s, not a redraw per tick.
const DefaultLineEvery = 10 * time.Second

// Live shows a status line: on a terminal it is redrawn in place at every
// Show; elsewhere (a pipe, a log file) each Show that comes Every after the
// last line written appends a plain, timestamped line — no carriage
// returns, no escape codes. Done writes the last status either way.
type Live struct {
	Out      io.Writer
	Every    time.Duration // default DefaultLineEvery
	Terminal *bool         // nil: detect from Out
	Now      func() time.Time

	decided, tty bool
	last         time.Time
	pending      string // the newest status not written yet (not a terminal)
	drawn        bool
}

func (l *Live) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Live) isTTY() bool {
	if !l.decided {
		l.decided = true
		if l.Terminal != nil {
			l.tty = *l.Terminal
		} else {
			l.tty = IsTerminal(l.Out)
		}
	}
	return l.tty
}

// Show displays line.
func (l *Live) Show(line string) {
	if l.isTTY() {
		fmt.Fprintf(l.Out, "\r\033[K%s", line)
		l.drawn = true
		return
	}
	every := l.Every
	if every <= 0 {
		every = DefaultLineEvery
	}
	now := l.now()
	if !l.last.IsZero() && now.Sub(l.last) < every {
		l.pending = line
		return
	}
	l.last, l.pending = now, ""
	fmt.Fprintf(l.Out, "%s %s\n", now.Format("15:04:05"), line)
}

// Done ends the display: a terminal's line is finished; elsewhere the
// newest status not yet written is.
func (l *Live) Done() {
	if l.isTTY() {
		if l.drawn {
			fmt.Fprintln(l.Out)
		}
		return
	}
	if l.pending != "" {
		fmt.Fprintf(l.Out, "%s %s\n", l.now().Format("15:04:05"), l.pending)
		l.pending = ""
	}
}

// Rate turns readings of a growing count into a rate over a sliding
// window. It has none until its readings span MinSpan: two readings a few
// milliseconds apart would make a meaningless first number (millions a
// second).
type Rate struct {
	Window  time.Duration // default 30 s
	MinSpan time.Duration // default 2 s
	samples []rateSample
}

type rateSample struct {
	at   time.Time
	done int64
}

// Add records a reading.
func (r *Rate) Add(at time.Time, done int64) {
	if n := len(r.samples); n > 0 && !at.After(r.samples[n-1].at) {
		r.samples[n-1].done = done
		return
	}
	r.samples = append(r.samples, rateSample{at, done})
	window := r.Window
	if window <= 0 {
		window = 30 * time.Second
	}
	// Keep the newest reading older than the window as its left edge.
	cut := 0
	for cut+1 < len(r.samples) && at.Sub(r.samples[cut+1].at) >= window {
		cut++
	}
	r.samples = r.samples[cut:]
}

// PerSecond is the rate; ok is false until the readings span MinSpan.
func (r *Rate) PerSecond() (float64, bool) {
	if len(r.samples) < 2 {
		return 0, false
	}
	first, last := r.samples[0], r.samples[len(r.samples)-1]
	span := last.at.Sub(first.at)
	min := r.MinSpan
	if min <= 0 {
		min = 2 * time.Second
	}
	if span < min {
		return 0, false
	}
	return float64(last.done-first.done) / span.Seconds(), true
}

// Progress draws done/total with a bar, a rate and an ETA through Live.
type Progress struct {
	Out   io.Writer
	Label string
	Unit  string        // "files", "versions"; empty: none
	Every time.Duration // lines when not a terminal; default DefaultLineEvery
	// Terminal overrides the detection from Out (tests).
	Terminal *bool
	Now      func() time.Time

	live *Live
	rate Rate
}

// Update shows the progress; extra is appended as is.
func (p *Progress) Update(done, total int, extra string) {
	if p.live == nil {
		p.live = &Live{Out: p.Out, Every: p.Every, Terminal: p.Terminal, Now: p.Now}
	}
	now := p.live.now()
	p.rate.Add(now, int64(done))
	p.live.Show(p.Line(done, total, extra))
}

// Line is the status Update shows.
func (p *Progress) Line(done, total int, extra string) string {
	var b strings.Builder
	b.WriteString(p.Label)
	if total > 0 {
		const width = 24
		filled := min(width, max(0, done*width/total))
		fmt.Fprintf(&b, " [%s%s]", strings.Repeat("#", filled), strings.Repeat(".", width-filled))
	}
	fmt.Fprintf(&b, " %d/%d", done, total)
	if p.Unit != "" {
		b.WriteString(" " + p.Unit)
	}
	if rate, ok := p.rate.PerSecond(); ok {
		unit := p.Unit
		if unit == "" {
			unit = "done"
		}
		fmt.Fprintf(&b, "  %s %s/s", humanRate(rate), unit)
		if rate > 0 && total > done {
			eta := time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second)
			fmt.Fprintf(&b, "  ETA %s", eta)
		}
	} else if done < total {
		b.WriteString("  measuring rate…")
	}
	if extra != "" {
		b.WriteString("  " + extra)
	}
	return b.String()
}

func humanRate(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

// Done ends the display.
func (p *Progress) Done() {
	if p.live != nil {
		p.live.Done()
	}
}
