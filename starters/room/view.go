package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

func printSettings(d contract.Description) {
	s := d.Settings
	host := s.Host
	if host == "" {
		host = "(every host)"
	}
	fmt.Printf("  route:     %s%s\n", host, s.Path)
	for _, r := range s.AdditionalRoutes {
		fmt.Printf("             %s%s\n", r.Host, r.Path)
	}
	if s.PathCaseInsensitive {
		fmt.Println("             (paths in any case)")
	}
	fmt.Printf("  limits:    %d active users, %d new users a minute, sessions of %d min", s.TotalActiveUsers, s.NewUsersPerMinute, s.SessionDuration)
	if s.DisableSessionRenewal {
		fmt.Print(" (not renewed)")
	}
	fmt.Printf("\n  queueing:  %s, status %d", s.QueueingMethod, s.QueueingStatusCode)
	for _, flag := range []struct {
		on   bool
		name string
	}{{s.QueueAll, "queue_all"}, {s.Suspended, "suspended"}, {s.JSONResponseEnabled, "json_response_enabled"}, {s.RevokeEnabled(), "revoke"}} {
		if flag.on {
			fmt.Printf(", %s", flag.name)
		}
	}
	fmt.Printf("\n  cookie:    samesite %s, secure %s", s.CookieAttributes.SameSite, s.CookieAttributes.Secure)
	if s.CookieSuffix != "" {
		fmt.Printf(", suffix %s", s.CookieSuffix)
	}
	page := "default"
	if s.CustomPageHTML != "" {
		page = fmt.Sprintf("custom (%d bytes)", len(s.CustomPageHTML))
	}
	fmt.Printf("\n  page:      %s; visitors check in every %d s; gates admit on snapshots up to %d s old\n", page, s.RefreshIntervalSeconds, s.SnapshotMaxAgeSeconds)
	fmt.Printf("  version:   %d, minute of %d s, %d events\n", d.SettingsVersion, d.MinuteSeconds, len(d.Events))
	if l := d.Ledger; l.OverReporters+l.OverBytes+d.Stats.ReportsUndecodable > 0 {
		fmt.Printf("  reports dropped: %d past max_reporters_per_minute (%d), %d past a minute's %d bytes, %d undecodable\n",
			l.OverReporters, s.ReportersPerMinute(), l.OverBytes, admit.MaxMinuteReportBytes, d.Stats.ReportsUndecodable)
	}
	if d.Deleted {
		fmt.Printf("  DELETED at %s\n", d.DeletedAt.Format(time.RFC3339))
	}
}

func statusLine(d contract.Description) string {
	s := d.Snapshot
	if d.Deleted {
		return fmt.Sprintf("%s: deleted at %s", d.Settings.Name, d.DeletedAt.Format(time.RFC3339))
	}
	api := s.StatusAPI()
	line := fmt.Sprintf("%s: %s — %d/%d active users, %d queued, %d let in a minute", d.Settings.Name, api.Status,
		api.EstimatedTotalActiveUsers, s.Settings.TotalActiveUsers, api.EstimatedQueuedUsers, int(s.LetInPerMinute+0.5))
	if api.MaxEstimatedTimeMinutes > 0 {
		line += fmt.Sprintf(", up to %d min wait", api.MaxEstimatedTimeMinutes)
	}
	if s.Event != nil {
		line += fmt.Sprintf(", event %s %s", s.Event.Name, s.Event.Phase)
	}
	return line
}

func eventLine(e admit.Event, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s %s → %s", e.Name, e.EventStartTime.Local().Format(time.RFC3339), e.EventEndTime.Local().Format(time.RFC3339))
	if e.PrequeueStartTime != nil {
		fmt.Fprintf(&b, ", pre-queue from %s", e.PrequeueStartTime.Local().Format(time.RFC3339))
	}
	if e.ShuffleAtEventStart {
		b.WriteString(", shuffled at start")
	}
	if ph := e.PhaseAt(now); ph != admit.NoEvent {
		fmt.Fprintf(&b, " [%s now]", ph)
	}
	var over []string
	if e.TotalActiveUsers != nil {
		over = append(over, fmt.Sprintf("total_active_users %d", *e.TotalActiveUsers))
	}
	if e.NewUsersPerMinute != nil {
		over = append(over, fmt.Sprintf("new_users_per_minute %d", *e.NewUsersPerMinute))
	}
	if e.SessionDuration != nil {
		over = append(over, fmt.Sprintf("session_duration %d", *e.SessionDuration))
	}
	if e.QueueingMethod != nil {
		over = append(over, "queueing_method "+string(*e.QueueingMethod))
	}
	if len(over) > 0 {
		b.WriteString("\n  overrides: " + strings.Join(over, ", "))
	}
	return b.String()
}

// liveLine is the live view in one line, or why there is none; stale
// figures are never shown as live.
func liveLine(l *admit.Live) string {
	switch {
	case l == nil:
		return "live: none"
	case l.AsOf == nil:
		return "live: STALE, " + l.Error
	}
	line := fmt.Sprintf("live (as of %s, %.1f s old): %d active users, %d queued, %d admitted this minute", l.AsOf.Local().Format("15:04:05"),
		l.AgeSeconds, l.ActiveUsers, l.QueuedUsers, l.AdmittedThisMinute)
	if l.EstimatedWaitMinutes > 0 {
		line += fmt.Sprintf(", up to %d min wait", l.EstimatedWaitMinutes)
	}
	if l.Stale {
		line = "STALE " + line + fmt.Sprintf(" (a data center's counts are older than %d s: left out)", l.MaxAgeSeconds)
	}
	return line
}

// follow redraws a live view of the room until ctx ends.
func follow(ctx context.Context, rc roomclient.Client, room string, every time.Duration) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	tty := cli.IsTerminal(os.Stdout)
	var printed time.Time
	for {
		d, err := rc.Describe(ctx, room)
		if err != nil {
			return err
		}
		live, _ := rc.Live(ctx, room, &d.Snapshot) // its error is in live.Error, in words
		switch {
		case tty:
			fmt.Print("\033[H\033[2J")
			fmt.Print(dashboard(d, live, time.Now()))
		case time.Since(printed) >= cli.DefaultLineEvery:
			// A log gets the view every 10 s, not a screen per refresh.
			printed = time.Now()
			fmt.Printf("--- %s\n%s", printed.Format(time.RFC3339), dashboard(d, live, printed))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func dashboard(d contract.Description, live *admit.Live, now time.Time) string {
	s := d.Snapshot
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", statusLine(d))
	if d.Deleted {
		return b.String()
	}
	fmt.Fprintf(&b, "  %s\n", liveLine(live))
	if live != nil {
		for _, dc := range live.DataCenters {
			stale := ""
			if dc.Stale {
				stale = fmt.Sprintf(" (STALE: %.0f s old, not in the totals)", dc.AgeSeconds)
			}
			fmt.Fprintf(&b, "    %-10s %d active, %d queued, %d admitted this minute, %d gates%s\n", dc.DataCenter,
				dc.ActiveUsers, dc.QueuedUsers, dc.AdmittedThisMinute, dc.Gates, stale)
		}
	}
	b.WriteString("\n  the minute rollup:\n")
	limit := max(s.Settings.TotalActiveUsers, 1)
	fmt.Fprintf(&b, "  active     %s %d / %d\n", bar(s.ActiveUsers, limit, 40), s.ActiveUsers, limit)
	fmt.Fprintf(&b, "  this minute %d slots (%d for new visitors), %d per minute allowed\n", s.SlotsAvailable, s.NewUserSlots, s.Settings.NewUsersPerMinute)
	fmt.Fprintf(&b, "  queued     %d", s.CurrentlyWaiting)
	if s.Estimate.Known && s.CurrentlyWaiting > 0 {
		switch s.Settings.QueueingMethod {
		case admit.Random:
			fmt.Fprintf(&b, ", half get in within %.1f min, three in four within %.1f min", s.Estimate.P50Minutes, s.Estimate.P75Minutes)
		default:
			fmt.Fprintf(&b, ", the newest waits about %.1f min", s.Estimate.MaxMinutes)
		}
	}
	fmt.Fprintf(&b, "\n  let in     %.0f a minute\n", s.LetInPerMinute)
	for _, t := range s.TrafficHistory {
		fmt.Fprintf(&b, "  %-10s %3.0f%% of the limit last minute, %d gates\n", t.DataCenter, t.Share*100, len(t.Gates))
	}
	if len(d.Recent) > 0 {
		b.WriteString("\n  minute  active  admitted  queued\n")
		from := max(0, len(d.Recent)-10)
		for _, m := range d.Recent[from:] {
			fmt.Fprintf(&b, "  %s  %6d  %8d  %6d\n", m.Minute.Local().Format("15:04"), m.ActiveUsers, m.Admitted, m.Waiting)
		}
	}
	fmt.Fprintf(&b, "\n  snapshot of %s (published %s ago); Ctrl-C to stop\n", s.Minute.Local().Format("15:04"), now.Sub(s.PublishedAt).Round(time.Second))
	return b.String()
}

func bar(n, of, width int) string {
	filled := min(width, n*width/max(of, 1))
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]"
}

// liveCell is a row's live figures: "12 queued, 40 active (2 s)", or
// "stale" when they are not all fresh.
func liveCell(l *admit.Live) string {
	if l == nil || l.AsOf == nil {
		return "-"
	}
	cell := fmt.Sprintf("%d queued, %d active (%.0f s)", l.QueuedUsers, l.ActiveUsers, l.AgeSeconds)
	if l.Stale {
		cell = "stale: " + cell
	}
	return cell
}

// flagName is the flag of a field: event_start_time → event-start-time.
func flagName(field string) string { return strings.ReplaceAll(field, "_", "-") }

// printRoomList prints the rooms as a table, one room a line.
func printRoomList(out io.Writer, rows []admit.RoomListEntry) {
	if len(rows) == 0 {
		fmt.Fprintln(out, "no rooms (create one with `room create`)")
		return
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tHOST\tPATH\tSTATUS\tACTIVE USERS\tQUEUED\tEST. WAIT\tLIVE")
	for _, r := range rows {
		host := r.Host
		if host == "" {
			host = "(any)"
		}
		status := strings.ReplaceAll(string(r.Status), "_", " ")
		if r.Event != "" {
			status += " (event " + r.Event + ")"
		}
		if r.Error != "" {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t-\t-\t-\t-\t%s\n", r.Name, host, r.Path, status, r.Error)
			continue
		}
		wait := "-"
		if r.EstimatedWaitMinutes > 0 {
			wait = fmt.Sprintf("%d min", r.EstimatedWaitMinutes)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\n", r.Name, host, r.Path, status, r.ActiveUsers, r.TotalActiveUsers, r.QueuedUsers, wait, liveCell(r.Live))
	}
	w.Flush()
}
