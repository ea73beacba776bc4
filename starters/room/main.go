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
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// command is one room command line: the shared flags, its own, and its
// positional arguments.
type command struct {
	name   string
	tc     config.Temporal
	json   bool
	follow bool
	all    bool
	file   string
	minute int
	every  time.Duration
	// redisURL is the gates' Anywhere Redis, where the live view is read.
	redisURL string
	sf       settingsFlags
	ef       eventFlags
	flags    *pflag.FlagSet // the running command's: which flags were given
	args     []string
}

func main() { cli.Execute(newRootCommand()) }

const exitCodes = `Exit codes: 0 done, 1 failed (no such room, refused), 2 bad usage or invalid settings
(the message names the field), 3 Temporal unreachable.`

func newRootCommand() *cobra.Command {
	c := &command{}
	root := cli.Group(&cobra.Command{
		Use:   "room",
		Short: "Manage waiting rooms: one room workflow per room, which gates read and report to",
		Long: `Manage waiting rooms: one room workflow per room (room/<name> on the admit queue),
which gates read and report to.

` + exitCodes,
		Example: `  room create shop --total-active-users 200 --new-users-per-minute 100 --path /shop/
  room status shop --follow
  room event add shop launch --event-start-time +10m --event-end-time +1h`,
	})
	c.tc.RegisterFlags(root.PersistentFlags())
	root.PersistentFlags().BoolVar(&c.json, "json", false, "print exactly one JSON document")

	sub := func(name, use, short, example string, args int) *cobra.Command {
		return &cobra.Command{
			Use: use, Short: short, Example: example, Args: cli.Args(args, args, map[int]string{0: "no name", 1: "a room name", 2: "a room and an event name"}[args]),
			RunE: func(cmd *cobra.Command, positional []string) error {
				c.name, c.args, c.flags = name, positional, cmd.Flags()
				if args > 0 && !admit.ValidName(c.args[0]) {
					return cli.Fail(cli.ExitUsage, "room %s: name: must be 1-64 letters, digits, hyphens or underscores, got %q", name, c.args[0])
				}
				return c.run()
			},
		}
	}
	create := sub("create", "create NAME", "Create a room: flags named after the settings, or --file room.json",
		"  room create shop --total-active-users 200 --new-users-per-minute 100 --path /shop/\n  room create shop --file room.json", 1)
	c.sf.register(create.Flags())
	create.Flags().StringVar(&c.file, "file", "", "read the settings from this JSON file (flags override it)")
	create.Flags().IntVar(&c.minute, "minute-seconds", 0, "length of the room's minute in seconds (tests; default 60)")
	update := sub("update", "update NAME", "Change a room's settings (only the flags given change)",
		"  room update shop --queueing-method random\n  room update shop --file room.json", 1)
	c.sf.register(update.Flags())
	update.Flags().StringVar(&c.file, "file", "", "read the settings from this JSON file (flags override it)")
	status := sub("status", "status NAME", "The room's status: the minute rollup and the live view (--json: the status API and live; --follow: redrawn)",
		"  room status shop\n  ADMIT_REDIS_URL=redis://127.0.0.1:6379/0 room status shop --json\n  room status shop --follow --every 5s --redis-url redis://127.0.0.1:6379/0", 1)
	status.Flags().BoolVar(&c.follow, "follow", false, "redraw a live view until Ctrl-C")
	status.Flags().DurationVar(&c.every, "every", 2*time.Second, "refresh interval of --follow")
	list := sub("list", "list", "Every room: path, host, status, active users of the limit, queued visitors, estimated wait",
		"  room list\n  room list --all --json", 0)
	list.Flags().BoolVar(&c.all, "all", false, "list deleted rooms too")
	for _, cmd := range []*cobra.Command{status, list} {
		cmd.Flags().StringVar(&c.redisURL, "redis-url", config.Env("ADMIT_REDIS_URL", ""),
			"the gates' Anywhere Redis, where each data center writes the room's live view (env ADMIT_REDIS_URL); empty: the live view is shown unavailable")
	}
	root.AddCommand(create, update,
		sub("get", "get NAME", "Show a room's settings (--json: the settings document)", "  room get shop --json", 1),
		sub("suspend", "suspend NAME", "Turn a room off: traffic passes untouched", "  room suspend shop", 1),
		sub("resume", "resume NAME", "Turn a suspended room back on", "  room resume shop", 1),
		sub("delete", "delete NAME", "Delete a room (gates stop queueing for it; it stays deleted)", "  room delete shop", 1),
		status, list)

	event := cli.Group(&cobra.Command{Use: "event", Short: "Schedule, list and cancel a room's events",
		Example: "  room event add shop launch --event-start-time +10m --event-end-time +1h\n  room event list shop"})
	add := sub("event add", "add ROOM EVENT", "Schedule an event: its times, and the settings it overrides while it runs",
		"  room event add shop launch --event-start-time +10m --event-end-time +1h --prequeue-start-time +1m\n  room event add shop launch --file event.json", 2)
	c.ef.register(add.Flags())
	add.Flags().StringVar(&c.file, "file", "", "read the event from this JSON file (flags override it)")
	event.AddCommand(add,
		sub("event list", "list ROOM", "A room's scheduled events", "  room event list shop --json", 1),
		sub("event cancel", "cancel ROOM EVENT", "Cancel a scheduled event", "  room event cancel shop launch", 2))
	root.AddCommand(event)
	return root
}

func (c *command) run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx = cli.Trace(ctx, "edgeflow-room-starter", "room "+c.name+" "+strings.Join(c.args, " "))
	// Settings are checked before Temporal is dialled: a typo exits 2 at once.
	var settings admit.Settings
	var event admit.Event
	var err error
	switch c.name {
	case "create":
		settings, err = c.settingsFromFileAndFlags(admit.Settings{})
	case "event add":
		event, err = c.eventFromFileAndFlags()
	}
	if err != nil {
		return c.check(err)
	}
	tc, err := c.tc.Dial(nil)
	if err != nil {
		return cli.Fail(cli.ExitUnavailable, "room: %v", err)
	}
	defer tc.Close()
	rc := roomclient.Client{C: tc}
	if c.name == "list" || c.name == "status" {
		if rc.LiveSource, err = gate.OpenLiveSource(c.redisURL); err != nil {
			return cli.Fail(cli.ExitUsage, "room %s: --redis-url: %v", c.name, err)
		}
	}
	if c.name == "list" {
		rows, err := rc.List(ctx, c.all)
		if err != nil {
			return c.check(err)
		}
		if c.json {
			cli.PrintJSON(rows)
			return nil
		}
		printRoomList(os.Stdout, rows)
		return nil
	}
	room := c.args[0]
	switch c.name {
	case "create":
		recreated, err := rc.Create(ctx, settings, roomclient.CreateOptions{MinuteSeconds: c.minute})
		if err != nil {
			return c.check(err)
		}
		verb := "created"
		if recreated {
			verb = "created again (it had been deleted)"
		}
		return c.settingsOut(ctx, rc, room, "room %s %s\n  %s", room, verb, cli.WorkflowURL(c.tc.Namespace, contract.RoomWorkflowID(room)))
	case "update":
		_, err := rc.Modify(ctx, room, func(s *admit.Settings) error {
			var err error
			*s, err = c.settingsFromFileAndFlags(*s)
			return err
		})
		if err != nil {
			return c.check(err)
		}
		return c.settingsOut(ctx, rc, room, "room %s updated", room)
	case "suspend", "resume":
		if _, err := rc.Modify(ctx, room, func(s *admit.Settings) error { s.Suspended = c.name == "suspend"; return nil }); err != nil {
			return c.check(err)
		}
		return c.settingsOut(ctx, rc, room, "room %s %s", room, map[string]string{"suspend": "suspended", "resume": "resumed"}[c.name])
	case "get":
		return c.settingsOut(ctx, rc, room, "")
	case "delete":
		if _, err := rc.Delete(ctx, room); err != nil {
			return c.check(err)
		}
		c.out(map[string]any{"name": room, "deleted": true}, "room %s deleted; gates stop queueing for it, and it stays deleted", room)
	case "status":
		if c.follow {
			return c.check(follow(ctx, rc, room, c.every))
		}
		d, err := rc.Describe(ctx, room)
		if err != nil {
			return c.check(err)
		}
		st, err := rc.Status(ctx, room, &d.Snapshot)
		if err != nil && !errors.Is(err, roomclient.ErrNoLiveSource) {
			fmt.Fprintf(os.Stderr, "room status: live view: %v\n", err)
		}
		c.out(st, "%s\n%s", statusLine(d), liveLine(st.Live))
	case "event add":
		ch, err := rc.AddEvent(ctx, room, event)
		if err != nil {
			return c.check(err)
		}
		c.out(event, "event %s scheduled in room %s: %s (settings v%d)", event.Name, room, event.String(), ch.SettingsVersion)
	case "event list":
		d, err := rc.Describe(ctx, room)
		if err != nil {
			return c.check(err)
		}
		if c.json {
			cli.PrintJSON(append([]admit.Event{}, d.Events...))
			return nil
		}
		if len(d.Events) == 0 {
			fmt.Printf("room %s has no scheduled events\n", room)
		}
		for _, e := range d.Events {
			fmt.Println(eventLine(e, time.Now()))
		}
	case "event cancel":
		if _, err := rc.CancelEvent(ctx, room, c.args[1]); err != nil {
			return c.check(err)
		}
		c.out(map[string]any{"room": room, "event": c.args[1], "cancelled": true}, "event %s of room %s cancelled", c.args[1], room)
	}
	return nil
}

// settingsFromFileAndFlags starts from base (or the --file, which replaces
// it), applies the flags given, and validates: invalid settings exit 2
// naming the field.
func (c *command) settingsFromFileAndFlags(base admit.Settings) (admit.Settings, error) {
	s := base
	if c.file != "" {
		data, err := os.ReadFile(c.file)
		if err != nil {
			return s, cli.Fail(cli.ExitUsage, "room %s: %v", c.name, err)
		}
		if s, err = admit.DecodeSettings(data); err != nil {
			return s, fmt.Errorf("%s: %w", c.file, err)
		}
	}
	if s.Name == "" {
		s.Name = c.args[0]
	}
	if s.Name != c.args[0] {
		return s, &admit.InvalidError{Problems: []*admit.FieldError{{Field: "name", Reason: fmt.Sprintf("the file names room %q, the command %q", s.Name, c.args[0])}}}
	}
	if err := c.sf.apply(c.flags, &s); err != nil {
		return s, err
	}
	s = s.WithDefaults()
	return s, s.Validate()
}

func (c *command) eventFromFileAndFlags() (admit.Event, error) {
	var e admit.Event
	if c.file != "" {
		data, err := os.ReadFile(c.file)
		if err != nil {
			return e, cli.Fail(cli.ExitUsage, "room event add: %v", err)
		}
		if e, err = admit.ParseEvent(data); err != nil {
			return e, fmt.Errorf("%s: %w", c.file, err)
		}
	}
	e.Name = c.args[1]
	if err := c.ef.apply(c.flags, &e, time.Now()); err != nil {
		return e, err
	}
	if e.EventStartTime.IsZero() || e.EventEndTime.IsZero() {
		field := "event_start_time"
		if !e.EventStartTime.IsZero() {
			field = "event_end_time"
		}
		return e, &admit.InvalidError{Problems: []*admit.FieldError{{Field: field, Reason: "is required (--" + flagName(field) + ")"}}}
	}
	return e, nil
}

func (c *command) settingsOut(ctx context.Context, rc roomclient.Client, room, format string, args ...any) error {
	d, err := rc.Describe(ctx, room)
	if err != nil {
		return c.check(err)
	}
	if c.json {
		cli.PrintJSON(d.Settings)
		return nil
	}
	if format != "" {
		fmt.Printf(format+"\n", args...)
	}
	printSettings(d)
	return nil
}

func (c *command) out(v any, format string, args ...any) {
	if c.json {
		cli.PrintJSON(v)
		return
	}
	fmt.Printf(format+"\n", args...)
}

// check is the error that ends the command with the code err calls for
// (nil for none).
func (c *command) check(err error) error {
	if err == nil {
		return nil
	}
	var inv *admit.InvalidError
	var exit *cli.ExitError
	switch {
	case errors.As(err, &exit):
		return err
	case errors.As(err, &inv):
		p := inv.First()
		msg := fmt.Sprintf("room %s: invalid %s: %s", c.name, p.Field, p.Reason)
		for _, more := range inv.Problems[1:] {
			msg += fmt.Sprintf("\n  also %s: %s", more.Field, more.Reason)
		}
		return cli.Fail(cli.ExitUsage, "%s", msg)
	case roomclient.Unavailable(err):
		return cli.Fail(cli.ExitUnavailable, "room %s: Temporal unreachable at %s: %v", c.name, c.tc.HostPort, err)
	case errors.Is(err, roomclient.ErrNotFound):
		return cli.Fail(cli.ExitFailed, "room %s: no room %q (create it with `room create`)", c.name, c.args[0])
	case errors.Is(err, context.Canceled):
		return nil
	default:
		return cli.Fail(cli.ExitFailed, "room %s: %v", c.name, err)
	}
}
