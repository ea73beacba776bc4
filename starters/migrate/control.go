package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// oneJob parses the flags of a command that takes exactly one JOB.
func oneJob(name string, args []string, c *common, extra func(*flag.FlagSet)) (string, bool) {
	fs := flag.NewFlagSet("migrate "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: migrate %s JOB [flags]\n", name)
		fs.PrintDefaults()
	}
	c.register(fs)
	if extra != nil {
		extra(fs)
	}
	pos, ok := parseArgs(fs, args)
	if !ok {
		return "", false
	}
	if len(pos) != 1 {
		fs.Usage()
		fmt.Fprintf(os.Stderr, "migrate %s: want exactly one JOB, got %d\n", name, len(pos))
		return "", false
	}
	return pos[0], true
}

func runStatus(args []string) int {
	var c common
	var watch bool
	var jobStore migrate.JobStoreConfig
	job, ok := oneJob("status", args, &c, func(fs *flag.FlagSet) {
		fs.BoolVar(&watch, "follow", false, "watch the job until it ends")
		jobStore.RegisterFlags(fs) // a finished job's summary, once its workflow is gone
	})
	if !ok {
		return cli.ExitUsage
	}
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

// runControl is pause, resume and abort: an update the job validates (a
// request that makes no sense in its state is refused with a reason).
func runControl(action string) func([]string) int {
	return func(args []string) int {
		var c common
		job, ok := oneJob(action, args, &c, nil)
		if !ok {
			return cli.ExitUsage
		}
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
	}
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
func runRedrive(args []string) int {
	var f jobFlags
	fs := flag.NewFlagSet("migrate redrive", flag.ContinueOnError)
	f.common.register(fs)
	fs.BoolVar(&f.follow, "follow", false, "show live progress while waiting")
	fs.BoolVar(&f.detach, "detach", false, "return once the redrive has started")
	pos, ok := parseArgs(fs, args)
	if !ok || len(pos) != 1 {
		fmt.Fprintln(os.Stderr, "Usage: migrate redrive JOB [--follow | --detach] [--json]")
		return cli.ExitUsage
	}
	job := pos[0]
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

// runList lists jobs, newest first, with the state each keeps in its memo.
func runList(args []string) int {
	var c common
	var account, state string
	var limit int
	var all bool
	var jobStore migrate.JobStoreConfig
	fs := flag.NewFlagSet("migrate list", flag.ContinueOnError)
	c.register(fs)
	fs.StringVar(&account, "account", "", "only this account's jobs")
	fs.StringVar(&state, "state", "", "only jobs in this state (queued, running, paused, aborted, completed, failed)")
	fs.IntVar(&limit, "limit", 50, "at most this many jobs")
	fs.BoolVar(&all, "all", false, "also the finished jobs whose workflow retention removed (their summaries in the job store)")
	jobStore.RegisterFlags(fs)
	if _, ok := parseArgs(fs, args); !ok {
		return cli.ExitUsage
	}
	tc, code := c.dial()
	if tc == nil {
		return code
	}
	defer tc.Close()
	rows, err := jobclient.List(background, tc, jobStore, jobclient.ListOptions{Account: account, State: state, Limit: limit, All: all})
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

// runAccount shows an account's line, or changes its limit.
func runAccount(args []string) int {
	var c common
	var limit int
	fs := flag.NewFlagSet("migrate account", flag.ContinueOnError)
	c.register(fs)
	fs.IntVar(&limit, "limit", 0, "set how many of the account's jobs run at once")
	pos, ok := parseArgs(fs, args)
	if !ok || len(pos) > 1 {
		fmt.Fprintln(os.Stderr, "Usage: migrate account [NAME] [--limit N] [--json]")
		return cli.ExitUsage
	}
	account := "default"
	if len(pos) == 1 {
		account = pos[0]
	}
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
