// Command room manages waiting rooms: one room workflow per room
// (room/<name> on the admit queue), which gates read and report to.
//
//	go run ./starters/room create shop --total-active-users 200 --new-users-per-minute 100 --path /shop/
//	go run ./starters/room create shop --file room.json
//	go run ./starters/room update shop --queueing-method random
//	go run ./starters/room get shop [--json]
//	go run ./starters/room suspend|resume|delete shop
//	go run ./starters/room status shop [--json] [--follow]
//	go run ./starters/room list [--json] [--all]
//	go run ./starters/room event add shop launch --event-start-time +10m --event-end-time +1h [--prequeue-start-time +1m]
//	go run ./starters/room event list|cancel shop [launch]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

const usage = `Usage: room COMMAND NAME [flags]

Commands:
  create NAME    create a room (flags named after the settings, or --file room.json)
  update NAME    change a room's settings (only the flags given change)
  get NAME       show a room's settings (--json: the settings document)
  suspend NAME   turn a room off: traffic passes untouched
  resume NAME    turn it back on
  delete NAME    delete a room (gates stop queueing for it; it stays deleted)
  status NAME    the room's status (--json: the status API; --follow: live)
  list           every room: path, host, status, active users of the limit,
                 queued visitors, estimated wait (--json: one array; --all: deleted too)
  event add ROOM EVENT --event-start-time T --event-end-time T [overrides]
  event list ROOM
  event cancel ROOM EVENT

Settings flags (create, update): --host --path --additional-routes --total-active-users
  --new-users-per-minute --session-duration --queueing-method --queueing-status-code
  --queue-all --suspended --disable-session-renewal --enabled-origin-commands
  --json-response-enabled --custom-page-html --cookie-attributes-samesite
  --cookie-attributes-secure --cookie-suffix --refresh-interval-seconds
  --snapshot-max-age-seconds --max-reporters-per-minute --always-use-https
  --queue-capacity --description

Exit codes: 0 done, 1 failed (no such room, refused), 2 bad usage or invalid settings
(the message names the field), 3 Temporal unreachable.
`

type command struct {
	name   string
	fs     *flag.FlagSet
	tc     config.Temporal
	json   bool
	follow bool
	all    bool
	file   string
	minute int
	every  time.Duration
	sf     settingsFlags
	ef     eventFlags
	args   []string
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(cli.ExitUsage)
	}
	name := os.Args[1]
	args := os.Args[2:]
	if name == "event" {
		if len(args) == 0 {
			fmt.Fprint(os.Stderr, usage)
			cli.Exit(cli.ExitUsage, "room: event needs add, list or cancel")
		}
		name, args = "event "+args[0], args[1:]
	}
	c := &command{name: name, fs: flag.NewFlagSet("room "+name, flag.ContinueOnError)}
	c.tc.RegisterFlags(c.fs)
	c.fs.BoolVar(&c.json, "json", false, "print exactly one JSON document")
	switch name {
	case "create", "update":
		c.sf.register(c.fs)
		c.fs.StringVar(&c.file, "file", "", "read the settings from this JSON file (flags override it)")
		if name == "create" {
			c.fs.IntVar(&c.minute, "minute-seconds", 0, "length of the room's minute in seconds (tests; default 60)")
		}
	case "status":
		c.fs.BoolVar(&c.follow, "follow", false, "redraw a live view until Ctrl-C")
		c.fs.DurationVar(&c.every, "every", 2*time.Second, "refresh interval of --follow")
	case "event add":
		c.ef.register(c.fs)
		c.fs.StringVar(&c.file, "file", "", "read the event from this JSON file (flags override it)")
	case "list":
		c.fs.BoolVar(&c.all, "all", false, "list deleted rooms too")
	case "get", "suspend", "resume", "delete", "event list", "event cancel":
	default:
		fmt.Fprint(os.Stderr, usage)
		cli.Exit(cli.ExitUsage, "room: unknown command %q", name)
	}
	var err error
	if c.args, err = parseInterleaved(c.fs, args); err != nil {
		os.Exit(cli.ExitUsage)
	}
	want, ok := map[string]int{"event add": 2, "event cancel": 2, "list": 0}[name]
	if !ok {
		want = 1
	}
	if len(c.args) != want {
		cli.Exit(cli.ExitUsage, "room %s: want %d name(s), got %q (see room --help)", name, want, c.args)
	}
	if want > 0 && !admit.ValidName(c.args[0]) {
		cli.Exit(cli.ExitUsage, "room %s: name: must be 1-64 letters, digits, hyphens or underscores, got %q", name, c.args[0])
	}
	c.run()
}

func (c *command) run() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx = cli.Trace(ctx, "edgeflow-room-starter", "room "+c.name+" "+strings.Join(c.args, " "))
	// Settings are checked before Temporal is dialled: a typo exits 2 at once.
	var settings admit.Settings
	var event admit.Event
	switch c.name {
	case "create":
		settings = c.settingsFromFileAndFlags(admit.Settings{})
	case "event add":
		event = c.eventFromFileAndFlags()
	}
	tc, err := c.tc.Dial(nil)
	if err != nil {
		cli.Exit(cli.ExitUnavailable, "room: %v", err)
	}
	defer tc.Close()
	rc := roomclient.Client{C: tc}
	if c.name == "list" {
		rows, err := rc.List(ctx, c.all)
		c.check(err)
		if c.json {
			cli.PrintJSON(rows)
			return
		}
		printRoomList(os.Stdout, rows)
		return
	}
	room := c.args[0]
	switch c.name {
	case "create":
		recreated, err := rc.Create(ctx, settings, roomclient.CreateOptions{MinuteSeconds: c.minute})
		c.check(err)
		verb := "created"
		if recreated {
			verb = "created again (it had been deleted)"
		}
		c.settingsOut(ctx, rc, room, "room %s %s\n  %s", room, verb, cli.WorkflowURL(c.tc.Namespace, contract.RoomWorkflowID(room)))
	case "update":
		_, err := rc.Modify(ctx, room, func(s *admit.Settings) error {
			*s = c.settingsFromFileAndFlags(*s)
			return nil
		})
		c.check(err)
		c.settingsOut(ctx, rc, room, "room %s updated", room)
	case "suspend", "resume":
		_, err := rc.Modify(ctx, room, func(s *admit.Settings) error { s.Suspended = c.name == "suspend"; return nil })
		c.check(err)
		c.settingsOut(ctx, rc, room, "room %s %s", room, map[string]string{"suspend": "suspended", "resume": "resumed"}[c.name])
	case "get":
		c.settingsOut(ctx, rc, room, "")
	case "delete":
		_, err := rc.Delete(ctx, room)
		c.check(err)
		c.out(map[string]any{"name": room, "deleted": true}, "room %s deleted; gates stop queueing for it, and it stays deleted", room)
	case "status":
		if c.follow {
			c.check(follow(ctx, rc, room, c.every))
			return
		}
		d, err := rc.Describe(ctx, room)
		c.check(err)
		c.out(d.Snapshot.StatusAPI(), "%s", statusLine(d))
	case "event add":
		ch, err := rc.AddEvent(ctx, room, event)
		c.check(err)
		c.out(event, "event %s scheduled in room %s: %s (settings v%d)", event.Name, room, event.String(), ch.SettingsVersion)
	case "event list":
		d, err := rc.Describe(ctx, room)
		c.check(err)
		if c.json {
			cli.PrintJSON(append([]admit.Event{}, d.Events...))
			return
		}
		if len(d.Events) == 0 {
			fmt.Printf("room %s has no scheduled events\n", room)
		}
		for _, e := range d.Events {
			fmt.Println(eventLine(e, time.Now()))
		}
	case "event cancel":
		_, err := rc.CancelEvent(ctx, room, c.args[1])
		c.check(err)
		c.out(map[string]any{"room": room, "event": c.args[1], "cancelled": true}, "event %s of room %s cancelled", c.args[1], room)
	}
}

// settingsFromFileAndFlags starts from base (or the --file, which replaces
// it), applies the flags given, and validates: invalid settings exit 2
// naming the field.
func (c *command) settingsFromFileAndFlags(base admit.Settings) admit.Settings {
	s := base
	if c.file != "" {
		data, err := os.ReadFile(c.file)
		if err != nil {
			cli.Exit(cli.ExitUsage, "room %s: %v", c.name, err)
		}
		if s, err = admit.DecodeSettings(data); err != nil {
			c.check(fmt.Errorf("%s: %w", c.file, err))
		}
	}
	if s.Name == "" {
		s.Name = c.args[0]
	}
	if s.Name != c.args[0] {
		c.check(&admit.InvalidError{Problems: []*admit.FieldError{{Field: "name", Reason: fmt.Sprintf("the file names room %q, the command %q", s.Name, c.args[0])}}})
	}
	c.check(c.sf.apply(&s))
	s = s.WithDefaults()
	c.check(s.Validate())
	return s
}

func (c *command) eventFromFileAndFlags() admit.Event {
	var e admit.Event
	if c.file != "" {
		data, err := os.ReadFile(c.file)
		if err != nil {
			cli.Exit(cli.ExitUsage, "room event add: %v", err)
		}
		if e, err = admit.ParseEvent(data); err != nil {
			c.check(fmt.Errorf("%s: %w", c.file, err))
		}
	}
	e.Name = c.args[1]
	c.check(c.ef.apply(&e, time.Now()))
	if e.EventStartTime.IsZero() || e.EventEndTime.IsZero() {
		field := "event_start_time"
		if !e.EventStartTime.IsZero() {
			field = "event_end_time"
		}
		c.check(&admit.InvalidError{Problems: []*admit.FieldError{{Field: field, Reason: "is required (--" + flagName(field) + ")"}}})
	}
	return e
}

func (c *command) settingsOut(ctx context.Context, rc roomclient.Client, room, format string, args ...any) {
	d, err := rc.Describe(ctx, room)
	c.check(err)
	if c.json {
		cli.PrintJSON(d.Settings)
		return
	}
	if format != "" {
		fmt.Printf(format+"\n", args...)
	}
	printSettings(d)
}

func (c *command) out(v any, format string, args ...any) {
	if c.json {
		cli.PrintJSON(v)
		return
	}
	fmt.Printf(format+"\n", args...)
}

// check exits with the code the error calls for.
func (c *command) check(err error) {
	if err == nil {
		return
	}
	var inv *admit.InvalidError
	switch {
	case errors.As(err, &inv):
		p := inv.First()
		msg := fmt.Sprintf("room %s: invalid %s: %s", c.name, p.Field, p.Reason)
		for _, more := range inv.Problems[1:] {
			msg += fmt.Sprintf("\n  also %s: %s", more.Field, more.Reason)
		}
		cli.Exit(cli.ExitUsage, "%s", msg)
	case roomclient.Unavailable(err):
		cli.Exit(cli.ExitUnavailable, "room %s: Temporal unreachable at %s: %v", c.name, c.tc.HostPort, err)
	case errors.Is(err, roomclient.ErrNotFound):
		cli.Exit(cli.ExitFailed, "room %s: no room %q (create it with `room create`)", c.name, c.args[0])
	case errors.Is(err, context.Canceled):
		cli.Finish(cli.ExitOK)
	default:
		cli.Exit(cli.ExitFailed, "room %s: %v", c.name, err)
	}
}
