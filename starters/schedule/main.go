// Command schedule manages the Temporal Schedule that starts PackageUpdates.
//
//	go run ./starters/schedule create [--every 10m]   (creates, or updates an existing one)
//	go run ./starters/schedule update --every 30m
//	go run ./starters/schedule pause|unpause [--note TEXT]
//	go run ./starters/schedule trigger
//	go run ./starters/schedule describe [--json]
//	go run ./starters/schedule delete
//	go run ./starters/schedule follow   (starts npm's registry follower, or finds it running)
package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/internal/publish/schedules"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func main() { cli.Execute(newRootCommand()) }

// starter is what every subcommand shares: the connection.
type starter struct{ tc config.Temporal }

func newRootCommand() *cobra.Command {
	var st starter
	root := cli.Group(&cobra.Command{
		Use:   "schedule",
		Short: "Manage the Temporal Schedule that starts PackageUpdates",
		Long: `Manage the Temporal Schedule that starts PackageUpdates, the check of every
package of the catalog for new versions.

Exit codes: 0 done, 1 failed, 2 bad usage, 3 Temporal unreachable.`,
		Example: `  schedule create --every 10m
  schedule describe --json
  schedule pause --note "registry outage"`,
	})
	st.tc.RegisterFlags(root.PersistentFlags())

	// --every is checked before Temporal is dialled: a typo exits 2 at once.
	every := func(cmd *cobra.Command, v *time.Duration, usage string) {
		cmd.Flags().DurationVar(v, "every", 10*time.Minute, usage)
		cmd.PreRunE = func(*cobra.Command, []string) error {
			if *v < schedules.MinEvery {
				return cli.Fail(cli.ExitUsage, "schedule: --every must be at least %s, got %s", schedules.MinEvery, *v)
			}
			return nil
		}
	}
	var createEvery, updateEvery time.Duration
	create := st.command("create", "Create the package-update schedule, or update it if it exists",
		"  schedule create\n  schedule create --every 30m --id package-updates-staging",
		func(ctx context.Context, c client.Client, id string) error {
			created, err := schedules.Upsert(ctx, c, id, createEvery)
			verb := "updated"
			if created {
				verb = "created"
			}
			return report(err, "%s schedule %s: PackageUpdates every %s\n  %s/namespaces/%s/schedules/%s", verb, id, createEvery, cli.UIURL(), st.tc.Namespace, id)
		})
	every(create, &createEvery, "interval between runs")
	update := st.command("update", "Change the interval of the existing schedule", "  schedule update --every 30m",
		func(ctx context.Context, c client.Client, id string) error {
			return report(schedules.Update(ctx, c.ScheduleClient().GetHandle(ctx, id), updateEvery), "updated schedule %s: every %s", id, updateEvery)
		})
	every(update, &updateEvery, "the new interval between runs")
	var note string
	pause := func(paused bool) func(context.Context, client.Client, string) error {
		return func(ctx context.Context, c client.Client, id string) error {
			verb := map[bool]string{true: "paused", false: "unpaused"}[paused]
			return report(schedules.Change(ctx, c.ScheduleClient().GetHandle(ctx, id), nil, &schedules.Pause{Paused: paused, Note: note}), "%s schedule %s", verb, id)
		}
	}
	pauseCmd := st.command("pause", "Stop starting runs (running ones finish)", `  schedule pause --note "registry outage"`, pause(true))
	unpauseCmd := st.command("unpause", "Start runs again", "  schedule unpause", pause(false))
	for _, c := range []*cobra.Command{pauseCmd, unpauseCmd} {
		c.Flags().StringVar(&note, "note", "", "note recorded with the change")
	}
	trigger := st.command("trigger", "Start a run now (skipped while one is running)", "  schedule trigger",
		func(ctx context.Context, c client.Client, id string) error {
			h := c.ScheduleClient().GetHandle(ctx, id)
			return report(h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP}), "triggered schedule %s", id)
		})
	var asJSON bool
	describeCmd := st.command("describe", "Show the schedule, its next and recent runs", "  schedule describe\n  schedule describe --json",
		func(ctx context.Context, c client.Client, id string) error {
			d, err := schedules.Describe(ctx, c.ScheduleClient().GetHandle(ctx, id))
			if err != nil {
				return report(err, "")
			}
			describe(d, asJSON)
			return nil
		})
	describeCmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	deleteCmd := st.command("delete", "Remove the schedule", "  schedule delete",
		func(ctx context.Context, c client.Client, id string) error {
			return report(c.ScheduleClient().GetHandle(ctx, id).Delete(ctx), "deleted schedule %s", id)
		})
	follow := &cobra.Command{
		Use:   "follow",
		Short: "Start npm's registry follower, or find it running",
		Long: `Start the RegistryFollower of npm's changes feed (ID registry-follower/npm), or find
the one running: it checks each catalog package that changes at once, and the
Schedule stays as the safety net. The workers read the feed at NPM_CHANGES_URL.`,
		Example: "  schedule follow", Args: cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			ctx := cli.Trace(context.Background(), "edgeflow-schedule-starter", "schedule follow")
			c, err := st.tc.Dial(nil)
			if err != nil {
				return cli.Fail(cli.ExitUnavailable, "schedule: %v", err)
			}
			defer c.Close()
			opts, workflowType, input := pubclient.FollowerStart(contract.RegistryNPM)
			run, err := c.ExecuteWorkflow(ctx, opts, workflowType, input)
			if err != nil {
				return cli.Fail(cli.ExitFailed, "schedule: follow: %v", err)
			}
			fmt.Printf("following npm's changes: %s (run %s)\n  %s/namespaces/%s/workflows/%s\n", run.GetID(), run.GetRunID(), cli.UIURL(), st.tc.Namespace, url.PathEscape(run.GetID()))
			return nil
		},
	}
	root.AddCommand(create, update, pauseCmd, unpauseCmd, trigger, describeCmd, deleteCmd, follow)
	return root
}

// command is a subcommand that dials Temporal (after the flags are
// checked) and runs body on the schedule --id names.
func (st *starter) command(name, short, example string, body func(ctx context.Context, c client.Client, id string) error) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use: name, Short: short, Example: example, Args: cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			// Tracing first: the client takes the tracing interceptor when dialled.
			ctx := cli.Trace(context.Background(), "edgeflow-schedule-starter", "schedule "+name)
			c, err := st.tc.Dial(nil)
			if err != nil {
				return cli.Fail(cli.ExitUnavailable, "schedule: %v", err)
			}
			defer c.Close()
			return body(ctx, c, id)
		},
	}
	cmd.Flags().StringVar(&id, "id", contract.UpdatesScheduleID, "schedule ID")
	return cmd
}

func report(err error, format string, args ...any) error {
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return cli.Fail(cli.ExitFailed, "schedule: not found — create it first with `schedule create`")
		}
		return cli.Fail(cli.ExitFailed, "schedule: %v", err)
	}
	fmt.Printf(format+"\n", args...)
	return nil
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
