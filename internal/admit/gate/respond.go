package gate

import (
	_ "embed"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cbroglie/mustache"

	"github.com/edgeflow/edgeflow/internal/admit"
)

//go:embed page.html.mustache
var defaultPageSource string

// defaultPage is the queue page of rooms without custom_page_html.
var defaultPage = func() *mustache.Template {
	t, err := mustache.ParseString(defaultPageSource)
	if err != nil {
		panic("gate: the default page does not parse: " + err.Error())
	}
	return t
}()

// respondQueued answers a visitor who waits (queued, pre-queued, or turned
// away by a closed room): the room's page, or with Accept: application/json
// and json_response_enabled Cloudflare Waiting Room's JSON object; both with
// the room's queueing_status_code and a Refresh header.
func (g *Gate) respondQueued(w http.ResponseWriter, r *http.Request, st *roomState, d admit.Decision, now time.Time) {
	vars := templateVars(st.snap, d, now)
	refresh := vars.RefreshIntervalSeconds
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if refresh > 0 {
		h.Set("Refresh", strconv.Itoa(refresh))
	}
	status := st.snap.Settings.QueueingStatusCode
	if status == 0 {
		status = admit.DefaultQueueingStatusCode
	}
	if st.snap.Settings.JSONResponseEnabled && wantsJSON(r.Header.Values("Accept")) {
		body, _ := json.Marshal(struct {
			Room jsonRoom `json:"cfWaitingRoom"`
		}{vars.jsonRoom})
		h.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(append(body, '\n'))
		return
	}
	page := st.page
	if page == nil {
		page = defaultPage
	}
	body, err := page.Render(vars.mustache())
	if err != nil && page != defaultPage {
		g.log.Warn("custom page failed to render; serving the default page", "room", st.snap.Room, "err", err)
		body, err = defaultPage.Render(vars.mustache())
	}
	if err != nil {
		g.log.Error("queue page", "room", st.snap.Room, "err", err)
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(body))
	}
}

// wantsJSON reports whether Accept names application/json.
func wantsJSON(accept []string) bool {
	for _, line := range accept {
		for part := range strings.SplitSeq(line, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "application/json" {
				return true
			}
		}
	}
	return false
}

// jsonRoom is Cloudflare Waiting Room's JSON response, field for field, so
// apps written for it work unchanged.
type jsonRoom struct {
	InWaitingRoom          bool   `json:"inWaitingRoom"`
	WaitTimeKnown          bool   `json:"waitTimeKnown"`
	WaitTime               int    `json:"waitTime"`
	WaitTime25Percentile   int    `json:"waitTime25Percentile"`
	WaitTime50Percentile   int    `json:"waitTime50Percentile"`
	WaitTime75Percentile   int    `json:"waitTime75Percentile"`
	WaitTimeFormatted      string `json:"waitTimeFormatted"`
	QueueIsFull            bool   `json:"queueIsFull"`
	QueueAll               bool   `json:"queueAll"`
	LastUpdated            string `json:"lastUpdated"`
	RefreshIntervalSeconds int    `json:"refreshIntervalSeconds"`
	QueueingMethod         string `json:"queueingMethod"`
	IsFIFOQueue            bool   `json:"isFIFOQueue"`
	IsRandomQueue          bool   `json:"isRandomQueue"`
	// Events, as Cloudflare Waiting Room's template variables name them.
	IsEventActive                bool   `json:"isEventActive"`
	IsEventPrequeueing           bool   `json:"isEventPrequeueing"`
	TimeUntilEventStart          int    `json:"timeUntilEventStart,omitempty"`
	TimeUntilEventStartFormatted string `json:"timeUntilEventStartFormatted,omitempty"`
	TimeUntilEventEnd            int    `json:"timeUntilEventEnd,omitempty"`
	TimeUntilEventEndFormatted   string `json:"timeUntilEventEndFormatted,omitempty"`
	ShuffleAtEventStart          bool   `json:"shuffleAtEventStart,omitempty"`
}

// pageVars are the template variables: the JSON fields, and a few for the
// default page.
type pageVars struct {
	jsonRoom
	closed bool
}

func (v pageVars) mustache() map[string]any {
	m := map[string]any{
		"inWaitingRoom":                v.InWaitingRoom,
		"waitTimeKnown":                v.WaitTimeKnown,
		"waitTime":                     v.WaitTime,
		"waitTime25Percentile":         v.WaitTime25Percentile,
		"waitTime50Percentile":         v.WaitTime50Percentile,
		"waitTime75Percentile":         v.WaitTime75Percentile,
		"waitTimeFormatted":            v.WaitTimeFormatted,
		"queueIsFull":                  v.QueueIsFull,
		"queueAll":                     v.QueueAll,
		"lastUpdated":                  v.LastUpdated,
		"refreshIntervalSeconds":       v.RefreshIntervalSeconds,
		"queueingMethod":               v.QueueingMethod,
		"isFIFOQueue":                  v.IsFIFOQueue,
		"isRandomQueue":                v.IsRandomQueue,
		"isEventActive":                v.IsEventActive,
		"isEventPrequeueing":           v.IsEventPrequeueing,
		"timeUntilEventStart":          v.TimeUntilEventStart,
		"timeUntilEventStartFormatted": v.TimeUntilEventStartFormatted,
		"timeUntilEventEnd":            v.TimeUntilEventEnd,
		"timeUntilEventEndFormatted":   v.TimeUntilEventEndFormatted,
		"shuffleAtEventStart":          v.ShuffleAtEventStart,
		"isClosed":                     v.closed,
	}
	return m
}

func templateVars(snap *admit.Snapshot, d admit.Decision, now time.Time) pageVars {
	w := d.Wait
	method := w.QueueingMethod
	if method == "" {
		method = snap.Settings.QueueingMethod
	}
	refresh := int((d.RefreshIn + time.Second - 1) / time.Second)
	if refresh <= 0 && d.Outcome != admit.Closed {
		refresh = admit.RefreshBase(snap.Settings.RefreshIntervalSeconds, snap.MinuteLength())
	}
	v := pageVars{closed: d.Outcome == admit.Closed}
	v.jsonRoom = jsonRoom{
		InWaitingRoom:          true,
		WaitTimeKnown:          w.Known,
		WaitTime:               w.Minutes,
		WaitTime25Percentile:   w.P25,
		WaitTime50Percentile:   w.P50,
		WaitTime75Percentile:   w.P75,
		WaitTimeFormatted:      formatWait(w),
		QueueIsFull:            w.QueueIsFull,
		QueueAll:               w.QueueAll,
		LastUpdated:            snap.PublishedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
		RefreshIntervalSeconds: refresh,
		QueueingMethod:         string(method),
		IsFIFOQueue:            method == admit.FIFO,
		IsRandomQueue:          method == admit.Random,
	}
	if ev := snap.Event; ev != nil {
		v.IsEventActive = ev.Phase == admit.EventActive
		v.IsEventPrequeueing = ev.Phase == admit.EventPrequeueing
		v.ShuffleAtEventStart = ev.ShuffleAtEventStart
		if until := ev.EventStartTime.Sub(now); until > 0 {
			v.TimeUntilEventStart = ceilMinutes(until)
			v.TimeUntilEventStartFormatted = formatMinutes(v.TimeUntilEventStart)
		}
		if until := ev.EventEndTime.Sub(now); until > 0 {
			v.TimeUntilEventEnd = ceilMinutes(until)
			v.TimeUntilEventEndFormatted = formatMinutes(v.TimeUntilEventEnd)
		}
	}
	return v
}

func ceilMinutes(d time.Duration) int { return int((d + time.Minute - 1) / time.Minute) }

// formatWait says the wait in words: "10 minutes" (FIFO), "5 minutes to
// 15 minutes" (random: the 25th to the 75th percentile), "unknown".
func formatWait(w admit.Wait) string {
	switch {
	case !w.Known:
		return "unknown"
	case w.QueueingMethod == admit.Random && w.P25 != w.P75:
		return formatMinutes(w.P25) + " to " + formatMinutes(w.P75)
	case w.QueueingMethod == admit.Random:
		return formatMinutes(w.P50)
	default:
		return formatMinutes(w.Minutes)
	}
}

func formatMinutes(m int) string {
	plural := func(n int, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return strconv.Itoa(n) + " " + unit + "s"
	}
	if m < 60 {
		return plural(m, "minute")
	}
	h, rest := m/60, m%60
	if rest == 0 {
		return plural(h, "hour")
	}
	return plural(h, "hour") + " " + plural(rest, "minute")
}
