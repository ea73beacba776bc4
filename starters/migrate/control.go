package main

import (
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// oneJob are the arguments of a command that takes exactly one JOB.
var oneJob = cli.Args(1, 1, "exactly one JOB")

func newStatusCommand(c *common) *cobra.Command {
	var watch bool
	var jobStore migrate.JobStoreConfig
	cmd := command("status JOB", "Show a job: state, counts, rate and ETA (--follow to watch it)", "",
		"  migrate status m-20260501-abcd\n  migrate status m-20260501-abcd --follow", oneJob,
		func(args []string) int { return runStatus(c, args[0], watch, jobStore) })
	cmd.Flags().BoolVar(&watch, "follow", false, "watch the job until it ends")
	jobStore.RegisterFlags(cmd.Flags()) // a finished job's summary, once its workflow is gone
	return cmd
}

func runStatus(c *common, job string, watch bool, jobStore migrate.JobStoreConfig) int {
	tc, code := c.dial()
	if tc == nil {
		return code
	}
	defer tc.Close()
	if watch {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { defer close(done); follow(tc, job, stop) }()
		_, _ = jobclient.Result(background, tc.GetWorkflow(background, contract.MigrationWorkflowID(job), ""))
		close(stop)
		<-done
	}
	st, err := jobclient.Status(background, tc, jobStore, job)
	if err != nil {
		return c.fail(statusCode(err), job, "status of job %s: %v", job, err)
	}
	return c.printFinal(st)
}

// newControlCommand is pause, resume and abort: an update the job
// validates (a request that makes no sense in its state is refused with a
// reason).
func newControlCommand(c *common, action, short string) *cobra.Command {
	return command(action+" JOB", short, "", "  migrate "+action+" m-20260501-abcd", oneJob, func(args []string) int {
		job := args[0]
		tc, code := c.dial()
		if tc == nil {
			return code
		}
		defer tc.Close()
		st, err := jobclient.Update(background, tc, job, action)
		if err != nil {
			return c.fail(controlCode(err), job, "%s job %s: %v", action, job, err)
		}
		if c.asJSON {
			cli.PrintJSON(st)
		} else {
			printStatus(os.Stdout, st)
		}
		return cli.ExitOK
	})
}

// controlCode: a request the job (or account) refused is bad input, told
// by the refusal's contract type; a job that has ended is gone to the
// server (NotFound), which temporalCode says is bad input too.
func controlCode(err error) int {
	if jobclient.Refused(err) {
		return cli.ExitUsage
	}
	return temporalCode(err)
}

// runRedrive retries a job's dead letters: a running job takes them up
// after its copy; an ended job runs again, on its own data, for them only.
func newRedriveCommand(c *common) *cobra.Command {
	var f jobFlags
	cmd := command("redrive JOB", "Retry a job's dead letters (failed objects)",
		"Retries a job's dead letters: a running job takes them up after its copy; an ended\njob runs again, on its own data, for them only.",
		"  migrate redrive m-20260501-abcd --follow", oneJob,
		func(args []string) int { f.common = *c; return runRedrive(&f, args[0]) })
	cmd.Flags().BoolVar(&f.follow, "follow", false, "show live progress while waiting")
	cmd.Flags().BoolVar(&f.detach, "detach", false, "return once the redrive has started")
	return cmd
}

func runRedrive(f *jobFlags, job string) int {
	tc, code := f.dial()
	if tc == nil {
		return code
	}
	defer tc.Close()
	run, running, err := jobclient.Redrive(background, tc, job)
	switch {
	case err != nil:
		return f.fail(controlCode(err), job, "redrive job %s: %v", job, err)
	case running && !f.asJSON:
		fmt.Fprintf(os.Stderr, "job %s is running: its dead letters are retried once its copy is done\n", job)
	}
	return f.awaitRun(tc, job, run, false)
}

// newListCommand lists jobs, newest first, with the state each keeps in
// its memo.
func newListCommand(c *common) *cobra.Command {
	var o jobclient.ListOptions
	var jobStore migrate.JobStoreConfig
	cmd := command("list", "List jobs, newest first, with their state (queued ones wait for a slot)", "",
		"  migrate list\n  migrate list --account team-a --state running --json", cli.NoArgs,
		func([]string) int { return runList(c, o, jobStore) })
	fs := cmd.Flags()
	fs.StringVar(&o.Account, "account", "", "only this account's jobs")
	fs.StringVar(&o.State, "state", "", "only jobs in this state (queued, running, paused, aborted, completed, failed)")
	fs.IntVar(&o.Limit, "limit", 50, "at most this many jobs")
	fs.BoolVar(&o.All, "all", false, "also the finished jobs whose workflow retention removed (their summaries in the job store)")
	jobStore.RegisterFlags(fs)
	return cmd
}

func runList(c *common, o jobclient.ListOptions, jobStore migrate.JobStoreConfig) int {
	tc, code := c.dial()
	if tc == nil {
		return code
	}
	defer tc.Close()
	rows, err := jobclient.List(background, tc, jobStore, o)
	if err != nil {
		return c.fail(statusCode(err), "", "%v", err)
	}
	if c.asJSON {
		if rows == nil {
			rows = []jobclient.Row{}
		}
		cli.PrintJSON(rows)
		return cli.ExitOK
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "JOB\tSTATE\tACCOUNT\tSTARTED\tSOURCE → DESTINATION")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Job, r.State, r.Account, r.Started.Local().Format("2006-01-02 15:04:05"), r.Summary)
	}
	w.Flush()
	return cli.ExitOK
}

// newAccountCommand shows an account's line, or changes its limit.
func newAccountCommand(c *common) *cobra.Command {
	var limit int
	cmd := command("account [NAME]", "Show an account's line of jobs; --limit N changes how many run at once", "",
		"  migrate account\n  migrate account team-a --limit 5", cli.Args(0, 1, "one account NAME at most"),
		func(args []string) int {
			account := "default"
			if len(args) == 1 {
				account = args[0]
			}
			return runAccount(c, account, limit)
		})
	cmd.Flags().IntVar(&limit, "limit", 0, "set how many of the account's jobs run at once")
	return cmd
}

func runAccount(c *common, account string, limit int) int {
	tc, code := c.dial()
	if tc == nil {
		return code
	}
	defer tc.Close()
	id := contract.MigrationAccountWorkflowID(account)
	var q contract.Queue
	if limit > 0 {
		h, err := tc.UpdateWorkflow(background, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: contract.SetLimitUpdate,
			Args: []any{limit}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(background, &q)
		}
		if err != nil {
			return c.fail(controlCode(err), "", "account %s: %v (an account exists while it has jobs; the worker's --jobs-per-account sets new ones)", account, err)
		}
	} else {
		v, err := tc.QueryWorkflow(background, id, "", contract.QueueQuery)
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
			q = contract.Queue{Account: account}
		case err != nil:
			return c.fail(temporalCode(err), "", "account %s: %v", account, err)
		default:
			if err := v.Get(&q); err != nil {
				return c.fail(cli.ExitFailed, "", "account %s: %v", account, err)
			}
		}
	}
	if c.asJSON {
		cli.PrintJSON(q)
		return cli.ExitOK
	}
	fmt.Printf("account %s: limit %d, running %d %v, waiting %d %v\n", q.Account, q.Limit, len(q.Running), q.Running, len(q.Waiting), q.Waiting)
	return cli.ExitOK
}
