package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// exitCode is a finished (or current) job's exit code: 0 only for a
// completed job with no failed and no mismatched objects.
func exitCode(st contract.Status) int {
	if st.State == contract.StateCompleted && st.Failed == 0 && st.Mismatched == 0 {
		return cli.ExitOK
	}
	if contract.Ended(st.State) {
		return cli.ExitFailed
	}
	return cli.ExitOK // still running: nothing failed yet
}

// printFinal prints a job's status (one JSON document with --json) and
// returns the exit code.
func (c *common) printFinal(st contract.Status) int {
	if c.asJSON {
		cli.PrintJSON(st)
	} else {
		printStatus(os.Stdout, st)
	}
	return exitCode(st)
}

func printStatus(out io.Writer, st contract.Status) {
	fmt.Fprintf(out, "job %s: %s\n", st.Job, st.State)
	fmt.Fprintf(out, "  %s → %s\n", st.Source, st.Dest)
	listed := fmt.Sprint(st.Listed)
	if !st.ListingDone && !contract.Ended(st.State) {
		listed += " so far"
	}
	verb := "copied"
	if st.DryRun {
		verb = "would copy"
	}
	fmt.Fprintf(out, "  listed %s (%s), %s %d (%s), skipped %d, failed %d\n",
		listed, migrate.HumanBytes(float64(st.ListedBytes)), verb, st.Copied, migrate.HumanBytes(float64(st.Bytes)), st.Skipped, st.Failed)
	if st.Limits != nil {
		fmt.Fprintf(out, "  source limits %s (each of %d pages in flight: an equal share)\n", st.Limits, st.Limits.Shares)
	}
	if st.Filter != nil || st.Filtered > 0 {
		fmt.Fprintf(out, "  left out by the filters %d (not listed)\n", st.Filtered)
	}
	if st.Verify {
		fmt.Fprintf(out, "  verified %d, mismatched %d\n", st.Verified, st.Mismatched)
	}
	if st.ObjectsPerSecond > 0 {
		line := fmt.Sprintf("  %.0f objects/s, %s/s", st.ObjectsPerSecond, migrate.HumanBytes(st.BytesPerSecond))
		if st.ETASeconds != nil {
			line += ", ETA " + (time.Duration(*st.ETASeconds) * time.Second).String()
		}
		fmt.Fprintln(out, line)
	}
	if st.Throttled > 0 {
		fmt.Fprintf(out, "  the stores asked to slow down %d times; concurrency was lowered meanwhile\n", st.Throttled)
	}
	switch {
	case st.State == contract.StateQueued:
		fmt.Fprintf(out, "  waiting for a slot of account %s\n", st.Account)
	case st.State == contract.StatePaused && st.PagesInFlight > 0:
		fmt.Fprintf(out, "  paused; %d pages in flight finish first\n", st.PagesInFlight)
	}
	if st.WaitingFor != "" && st.WaitingSince != nil {
		fmt.Fprintf(out, "  waiting for the %s store since %s (%s): %s\n  no new transfers; it is probed and the job goes on by itself (`migrate abort %s` ends it)\n",
			st.WaitingFor, st.WaitingSince.UTC().Format(time.RFC3339), time.Since(*st.WaitingSince).Round(time.Second), st.WaitingReason, st.Job)
	}
	if st.Redriving {
		fmt.Fprintf(out, "  redriving dead letters (pass %d)\n", st.RedrivePasses)
	}
	if st.Failed > 0 && contract.Ended(st.State) {
		fmt.Fprintf(out, "  %d objects failed: `migrate report %s --failed` lists them, `migrate redrive %s` retries them\n", st.Failed, st.Job, st.Job)
	}
	if st.Error != "" {
		fmt.Fprintf(out, "  error: %s\n", st.Error)
	}
}

// follow shows a job's progress until stop is closed: a live bar on a
// terminal, a plain line every 10 seconds otherwise (cli.Live). The rate
// comes from this process's own readings, and is shown only once they span
// 2 seconds.
func follow(c client.Client, job string, stop <-chan struct{}) {
	followRun(c, job, contract.MigrationWorkflowID(job), stop)
}

// followRun is follow for one run of a job, by its workflow id (a sync run's).
func followRun(c client.Client, job, id string, stop <-chan struct{}) {
	live := &cli.Live{Out: os.Stderr}
	every := 500 * time.Millisecond
	if !cli.IsTerminal(os.Stderr) {
		every = 2 * time.Second // Live writes one line in five
	}
	var meter migrate.RateMeter
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		st, err := jobclient.QueryRun(background, c, job, id)
		if err == nil {
			meter.Add(migrate.Sample{At: time.Now(), Objects: st.Done(), Bytes: st.Bytes})
			live.Show(progressLine(st, &meter))
		}
		select {
		case <-stop:
			live.Done()
			return
		case <-t.C:
		}
	}
}

func progressLine(st contract.Status, meter *migrate.RateMeter) string {
	done, listed := st.Done(), st.Listed
	var b strings.Builder
	if st.ListingDone && listed > 0 {
		const width = 30
		filled := int(done * width / listed)
		fmt.Fprintf(&b, "[%s%s] %d/%d", strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, listed)
	} else {
		fmt.Fprintf(&b, "%d done of %d listed so far", done, listed)
	}
	fmt.Fprintf(&b, "  copied %d skipped %d failed %d  %s", st.Copied, st.Skipped, st.Failed, migrate.HumanBytes(float64(st.Bytes)))
	if objs, bytes, ok := meter.Rate(); ok {
		fmt.Fprintf(&b, "  %.0f obj/s %s/s", objs, migrate.HumanBytes(bytes))
		if eta, ok := migrate.ETA(listed-done, objs); ok && st.ListingDone {
			fmt.Fprintf(&b, "  ETA %s", eta)
		}
	} else {
		b.WriteString("  measuring rate…")
	}
	if st.State != contract.StateRunning {
		b.WriteString("  (" + st.State + ")")
	}
	return b.String()
}
