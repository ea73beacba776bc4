package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// syncFlags are the flags of migrate sync.
type syncFlags struct {
	every                          time.Duration
	deleteExtraneous               bool
	pause, resume, trigger, remove bool
	follow, detach                 bool
}

// minSyncEvery is the shortest interval of a sync Schedule: each run lists
// the whole source.
const minSyncEvery = 10 * time.Second

func newSyncCommand(c *common) *cobra.Command {
	var f syncFlags
	cmd := command("sync JOB", "Copy what is new or changed since a finished job (or its last sync): now, or every --every",
		`Runs a finished job again between the same stores, copying only what is new or
changed (each object compared with the destination: size, then ETag or MD5),
and counting what the destination has that the source no longer has
(--delete-extraneous deletes it). Without --every it runs once now and waits,
as start does (same exit codes and --json document, plus changed, unchanged,
extraneous, deleted and lagSeconds). --every DURATION puts the job's syncs on
a Temporal Schedule (migrate-sync/JOB); --pause, --resume, --trigger and
--remove control it.`,
		`  migrate sync m-20260501-abcd --json
  migrate sync m-20260501-abcd --delete-extraneous --follow
  migrate sync m-20260501-abcd --every 15m
  migrate sync m-20260501-abcd --pause`,
		oneJob, func(args []string) int { return runSync(c, &f, args[0]) })
	fs := cmd.Flags()
	fs.DurationVar(&f.every, "every", 0, "put the job's syncs on a Schedule, one run every DURATION (at least 10s; runs that would overlap are skipped)")
	fs.BoolVar(&f.deleteExtraneous, "delete-extraneous", false, "delete at the destination what the source does not have (default: count it, delete nothing)")
	fs.BoolVar(&f.pause, "pause", false, "pause the job's sync Schedule")
	fs.BoolVar(&f.resume, "resume", false, "resume the job's sync Schedule")
	fs.BoolVar(&f.trigger, "trigger", false, "start a run of the job's sync Schedule now")
	fs.BoolVar(&f.remove, "remove", false, "remove the job's sync Schedule")
	fs.BoolVar(&f.follow, "follow", false, "show live progress while waiting")
	fs.BoolVar(&f.detach, "detach", false, "return once the sync has started")
	return cmd
}

// scheduleAction is the one Schedule control the flags ask for ("" none),
// or the problem with them.
func (f *syncFlags) scheduleAction() (string, error) {
	var actions []string
	for name, on := range map[string]bool{jobclient.SchedulePause: f.pause, jobclient.ScheduleResume: f.resume,
		jobclient.ScheduleTrigger: f.trigger, jobclient.ScheduleRemove: f.remove} {
		if on {
			actions = append(actions, name)
		}
	}
	switch {
	case len(actions) > 1:
		return "", fmt.Errorf("--pause, --resume, --trigger and --remove exclude each other")
	case len(actions) == 1 && (f.every != 0 || f.deleteExtraneous || f.follow || f.detach):
		return "", fmt.Errorf("--%s controls the Schedule; --every, --delete-extraneous, --follow and --detach go without it", actions[0])
	case f.every != 0 && f.every < minSyncEvery:
		return "", fmt.Errorf("--every %s: at least %s (each run lists the whole source)", f.every, minSyncEvery)
	case f.every != 0 && (f.follow || f.detach):
		return "", fmt.Errorf("--every starts no run now: --follow and --detach go without it")
	case f.follow && f.detach:
		return "", fmt.Errorf("--follow and --detach exclude each other")
	case len(actions) == 1:
		return actions[0], nil
	}
	return "", nil
}

func runSync(c *common, f *syncFlags, job string) int {
	if err := migrate.CheckJobID(job); err != nil {
		return c.fail(cli.ExitUsage, job, "%v", err)
	}
	action, err := f.scheduleAction()
	if err != nil {
		return c.fail(cli.ExitUsage, job, "%v", err)
	}
	tc, code := c.dial()
	if tc == nil {
		return code
	}
	defer tc.Close()
	if action != "" {
		return controlSchedule(c, tc, job, action)
	}
	base, err := jobclient.SyncBase(background, tc, job)
	if err != nil {
		return c.fail(controlCode(err), job, "sync job %s: %v", job, err)
	}
	request := contract.SyncRun{DeleteExtraneous: f.deleteExtraneous}
	if f.every != 0 {
		created, err := jobclient.ScheduleSyncs(background, tc, base, request, f.every)
		if err != nil {
			return c.fail(temporalCode(err), job, "schedule the syncs of job %s: %v", job, err)
		}
		return printSchedule(c, tc, job, map[bool]string{true: "created", false: "updated"}[created])
	}
	run, err := jobclient.StartSync(background, tc, base, request)
	if err != nil {
		return c.fail(temporalCode(err), job, "start a sync of job %s: %v", job, err)
	}
	return awaitSync(c, tc, job, run, f.follow, f.detach, false)
}

// controlSchedule pauses, resumes, triggers or removes the job's Schedule.
func controlSchedule(c *common, tc client.Client, job, action string) int {
	if err := jobclient.ControlSchedule(background, tc, job, action); err != nil {
		if jobclient.NotFound(err) {
			return c.fail(cli.ExitUsage, job, "job %s has no sync schedule (migrate sync %s --every DURATION creates it)", job, job)
		}
		return c.fail(temporalCode(err), job, "%s the sync schedule of job %s: %v", action, job, err)
	}
	if action == jobclient.ScheduleRemove {
		if c.asJSON {
			cli.PrintJSON(map[string]any{"job": job, "scheduleId": contract.MigrationSyncScheduleID(job), "removed": true})
		} else {
			fmt.Printf("removed the sync schedule of job %s\n", job)
		}
		return cli.ExitOK
	}
	done := map[string]string{jobclient.SchedulePause: "paused", jobclient.ScheduleResume: "resumed", jobclient.ScheduleTrigger: "triggered"}[action]
	return printSchedule(c, tc, job, done)
}

func printSchedule(c *common, tc client.Client, job, done string) int {
	s, err := jobclient.DescribeSchedule(background, tc, job)
	if err != nil {
		return c.fail(temporalCode(err), job, "read the sync schedule of job %s: %v", job, err)
	}
	if c.asJSON {
		cli.PrintJSON(s)
		return cli.ExitOK
	}
	state := "active"
	if s.Paused {
		state = "paused"
	}
	fmt.Printf("%s the sync schedule %s of job %s: every %s, %s", done, s.ScheduleID, job, s.Every, state)
	if s.DeleteExtraneous {
		fmt.Print(", deleting what the source lacks")
	}
	fmt.Println()
	if len(s.Next) > 0 && !s.Paused {
		fmt.Printf("  next run %s\n", s.Next[0])
	}
	return cli.ExitOK
}

// awaitSync waits for a sync run (or returns once started with detach) and
// prints its report; a cutover's exit code is its verdict.
func awaitSync(c *common, tc client.Client, job string, run client.WorkflowRun, follow, detach, cutover bool) int {
	if !c.asJSON {
		fmt.Fprintf(os.Stderr, "sync of job %s started\n  %s\n", job, cli.WorkflowURL(c.temporal.Namespace, run.GetID()))
	}
	if detach {
		st := contract.Status{Job: job, State: contract.StateQueued}
		if s, err := jobclient.QueryRun(background, tc, job, run.GetID()); err == nil {
			st = s
		}
		if c.asJSON {
			cli.PrintJSON(syncDocument{contract.SyncReportOf(st), run.GetID(), run.GetRunID()})
		}
		return cli.ExitOK
	}
	stop, followed := make(chan struct{}), make(chan struct{})
	if follow {
		go func() { defer close(followed); followRun(tc, job, run.GetID(), stop) }()
	} else {
		close(followed)
	}
	st, err := jobclient.Result(background, run)
	close(stop)
	<-followed
	if err != nil && st.Job == "" {
		return c.fail(cli.ExitFailed, job, "sync of job %s: %v", job, err)
	}
	if c.asJSON {
		cli.PrintJSON(syncDocument{contract.SyncReportOf(st), run.GetID(), run.GetRunID()})
	} else {
		printSync(os.Stdout, st)
	}
	if cutover {
		if st.Identical != nil && *st.Identical {
			return cli.ExitOK
		}
		return cli.ExitFailed
	}
	return exitCode(st)
}

// syncDocument is the one JSON document of a sync: its report and its run.
type syncDocument struct {
	contract.SyncReport
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
}

func printSync(out io.Writer, st contract.Status) {
	printStatus(out, st)
	fmt.Fprintf(out, "  of the copies %d changed, %d new; unchanged %d\n", st.Changed, st.Copied-st.Changed, st.Unchanged)
	switch {
	case st.Deleted > 0 || st.Sync != nil && st.Sync.DeleteExtraneous:
		fmt.Fprintf(out, "  deleted %d objects the source does not have\n", st.Deleted)
	case st.Extraneous > 0:
		fmt.Fprintf(out, "  %d objects at the destination are not at the source: --delete-extraneous would delete them (`migrate report %s --sync RUN` lists them, status extraneous)\n", st.Extraneous, st.Job)
	}
	if st.LagSeconds != nil {
		fmt.Fprintf(out, "  lag: the destination holds the source as of %s, %s before this run ended\n",
			st.Started.UTC().Format(time.RFC3339), (time.Duration(*st.LagSeconds * float64(time.Second))).Round(time.Second))
	}
	if st.Identical == nil {
		return
	}
	if *st.Identical {
		fmt.Fprintf(out, "  identical: every one of %d objects has the same size and checksum on both sides, and the destination has nothing else\n", st.Listed)
		return
	}
	fmt.Fprintf(out, "  NOT identical: %d differences\n", st.DifferenceCount)
	for _, d := range st.Differences {
		fmt.Fprintf(out, "    %s: %s\n", d.Key, d.What)
	}
	if int64(len(st.Differences)) < st.DifferenceCount {
		fmt.Fprintf(out, "    … `migrate report %s --sync %s` lists them all\n", st.Job, st.Sync.WorkflowID)
	}
}

func newCutoverCommand(c *common) *cobra.Command {
	var deleteExtraneous, follow bool
	cmd := command("cutover JOB", "Pause the job's syncs, run one last sync that verifies every object, and say whether both sides are identical",
		`Pauses the job's sync Schedule (if it has one), waits for the syncs in flight,
and runs one last sync that copies what is new or changed, then verifies every
object: size, then the ETag where both are MD5s, else the MD5 of the bytes.
It reports whether source and destination are identical ("identical": true,
exit 0), or the differences (exit 1): objects that failed or mismatched, and
objects at the destination the source does not have (--delete-extraneous
deletes them first).`,
		`  migrate cutover m-20260501-abcd
  migrate cutover m-20260501-abcd --delete-extraneous --json`,
		oneJob, func(args []string) int { return runCutover(c, args[0], deleteExtraneous, follow) })
	cmd.Flags().BoolVar(&deleteExtraneous, "delete-extraneous", false, "the last sync deletes at the destination what the source does not have")
	cmd.Flags().BoolVar(&follow, "follow", false, "show live progress while waiting")
	return cmd
}

func runCutover(c *common, job string, deleteExtraneous, follow bool) int {
	if err := migrate.CheckJobID(job); err != nil {
		return c.fail(cli.ExitUsage, job, "%v", err)
	}
	tc, code := c.dial()
	if tc == nil {
		return code
	}
	defer tc.Close()
	run, paused, err := jobclient.Cutover(background, tc, job, deleteExtraneous)
	if err != nil {
		return c.fail(controlCode(err), job, "cutover of job %s: %v", job, err)
	}
	if paused && !c.asJSON {
		fmt.Fprintf(os.Stderr, "paused the sync schedule of job %s (migrate sync %s --resume resumes it)\n", job, job)
	}
	return awaitSync(c, tc, job, run, follow, false, true)
}

// syncCommands are the commands of a live migration, for the root.
func syncCommands(c *common) []*cobra.Command {
	return []*cobra.Command{newSyncCommand(c), newCutoverCommand(c)}
}
