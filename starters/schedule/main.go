// Command schedule manages the Temporal Schedule that starts PackageUpdates.
//
//	go run ./starters/schedule create [--every 10m]   (creates, or updates an existing one)
//	go run ./starters/schedule update --every 30m
//	go run ./starters/schedule pause|unpause [--note TEXT]
//	go run ./starters/schedule trigger
//	go run ./starters/schedule describe [--json]
//	go run ./starters/schedule delete
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/publish/schedules"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

const usage = `Usage: schedule COMMAND [flags]

Commands:
  create     create the package-update schedule, or update it if it exists
  update     change the interval of the existing schedule
  pause      stop starting runs (running ones finish)
  unpause    start runs again
  trigger    start a run now
  describe   show the schedule, its next and recent runs
  delete     remove the schedule

Exit codes: 0 done, 1 failed, 2 bad usage, 3 Temporal unreachable.
`

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(cli.ExitUsage)
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet("schedule "+cmd, flag.ContinueOnError)
	var tc config.Temporal
	tc.RegisterFlags(fs)
	every := fs.Duration("every", 10*time.Minute, "interval between runs (create, update)")
	id := fs.String("id", contract.UpdatesScheduleID, "schedule ID")
	note := fs.String("note", "", "note recorded with pause/unpause")
	asJSON := fs.Bool("json", false, "print JSON (describe)")
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(cli.ExitUsage)
	}
	if *every < schedules.MinEvery {
		cli.Exit(cli.ExitUsage, "schedule: --every must be at least %s, got %s", schedules.MinEvery, *every)
	}
	// Tracing first: the client takes the tracing interceptor when dialled.
	ctx := cli.Trace(context.Background(), "edgeflow-schedule-starter", "schedule "+cmd)
	c, err := tc.Dial(nil)
	if err != nil {
		cli.Exit(cli.ExitUnavailable, "schedule: %v", err)
	}
	defer c.Close()
	sc := c.ScheduleClient()
	h := sc.GetHandle(ctx, *id)

	switch cmd {
	case "create":
		created, err := schedules.Upsert(ctx, c, *id, *every)
		verb := "updated"
		if created {
			verb = "created"
		}
		report(err, "%s schedule %s: PackageUpdates every %s\n  %s/namespaces/%s/schedules/%s", verb, *id, *every, cli.UIURL(), tc.Namespace, *id)
	case "update":
		report(schedules.Update(ctx, h, *every), "updated schedule %s: every %s", *id, *every)
	case "pause":
		report(schedules.Change(ctx, h, nil, &schedules.Pause{Paused: true, Note: *note}), "paused schedule %s", *id)
	case "unpause":
		report(schedules.Change(ctx, h, nil, &schedules.Pause{Paused: false, Note: *note}), "unpaused schedule %s", *id)
	case "trigger":
		report(h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP}), "triggered schedule %s", *id)
	case "delete":
		report(h.Delete(ctx), "deleted schedule %s", *id)
	case "describe":
		d, err := schedules.Describe(ctx, h)
		if err != nil {
			report(err, "")
		}
		describe(d, *asJSON)
	default:
		fmt.Fprint(os.Stderr, usage)
		cli.Exit(cli.ExitUsage, "schedule: unknown command %q", cmd)
	}
}

func report(err error, format string, args ...any) {
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			cli.Exit(cli.ExitFailed, "schedule: not found — create it first with `schedule create`")
		}
		cli.Exit(cli.ExitFailed, "schedule: %v", err)
	}
	fmt.Printf(format+"\n", args...)
}

func describe(out schedules.Description, asJSON bool) {
	id := out.ID
	if asJSON {
		cli.PrintJSON(out)
		return
	}
	state := "active"
	if out.Paused {
		state = "paused"
	}
	fmt.Printf("schedule %s: %s, every %v, %d runs started, %d skipped (previous run still going)\n", id, state, out.Every, out.Actions, out.Skipped)
	if out.Note != "" {
		fmt.Printf("  note: %s\n", out.Note)
	}
	for i, t := range out.Next {
		if i == 3 {
			break // --json lists them all
		}
		fmt.Printf("  next: %s\n", t.Local().Format(time.RFC3339))
	}
	for _, r := range out.Recent {
		fmt.Printf("  ran:  %s  %s\n", r.Started.Local().Format(time.RFC3339), r.WorkflowID)
	}
	for _, w := range out.Running {
		fmt.Printf("  running: %s\n", w)
	}
}
