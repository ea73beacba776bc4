package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/migrate"
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
		_, _ = result(tc.GetWorkflow(background, contract.MigrationWorkflowID(job), ""))
		close(stop)
		<-done
	}
	st, err := jobStatus(tc, jobStore, job)
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
		st, err := update(tc, job, action)
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

func update(tc client.Client, job, name string) (contract.Status, error) {
	var st contract.Status
	err := cli.Update(background, tc, client.UpdateWorkflowOptions{WorkflowID: contract.MigrationWorkflowID(job), UpdateName: name}, &st)
	return st, err
}

// controlCode: a request the job (or account) refused is bad input, told
// by the refusal's contract type; a job that has ended is gone to the
// server (NotFound), which temporalCode says is bad input too.
func controlCode(err error) int {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		switch app.Type() {
		case contract.ErrNotRunning, contract.ErrNotPaused, contract.ErrJobEnded, contract.ErrNothingToRedrive, contract.ErrInvalidLimit:
			return cli.ExitUsage
		}
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
	id := contract.MigrationWorkflowID(job)
	d, err := tc.DescribeWorkflow(background, id, "")
	if err != nil {
		return f.fail(temporalCode(err), job, "job %s: %v", job, err)
	}
	if d.WorkflowCloseTime == nil {
		st, err := update(tc, job, contract.RedriveUpdate)
		if err != nil {
			return f.fail(controlCode(err), job, "redrive job %s: %v", job, err)
		}
		if !f.asJSON {
			fmt.Fprintf(os.Stderr, "job %s is %s: its dead letters are retried once its copy is done\n", job, st.State)
		}
		return f.awaitRun(tc, job, tc.GetWorkflow(background, id, ""), false)
	}
	prev, err := result(tc.GetWorkflow(background, id, ""))
	if err != nil {
		return f.fail(cli.ExitFailed, job, "job %s ended without a status to redrive from: %v", job, err)
	}
	if prev.DryRun {
		return f.fail(cli.ExitUsage, job, "job %s was a dry run: it copied nothing and has nothing to redrive", job)
	}
	if prev.Failed == 0 {
		return f.fail(cli.ExitUsage, job, "job %s has no dead letters (failed 0)", job)
	}
	in, err := lastInput(tc, id, d.WorkflowExecution.RunID)
	if err != nil {
		return f.fail(cli.ExitFailed, job, "read the input of job %s: %v", job, err)
	}
	in.Resume = nil
	in.Redrive = &contract.RedriveFrom{Execution: prev.Execution, Started: prev.Started, Passes: prev.RedrivePasses, Counters: prev.Counters}
	run, err := startJob(tc, in)
	if err != nil {
		return f.fail(temporalCode(err), job, "start the redrive of job %s: %v", job, err)
	}
	return f.awaitRun(tc, job, run, false)
}

// lastInput reads the input a run of a job was started with (its sealed
// credentials included, which stay sealed).
func lastInput(tc client.Client, id, runID string) (contract.JobInput, error) {
	it := tc.GetWorkflowHistory(background, id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return contract.JobInput{}, fmt.Errorf("empty history")
	}
	ev, err := it.Next()
	if err != nil {
		return contract.JobInput{}, err
	}
	var in contract.JobInput
	attrs := ev.GetWorkflowExecutionStartedEventAttributes()
	if attrs == nil {
		return in, fmt.Errorf("the history does not start with the job's start")
	}
	return in, converter.GetDefaultDataConverter().FromPayloads(attrs.GetInput(), &in)
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
	type row = listRow
	var rows []row
	var token []byte
	live := map[string]bool{}
	// With --all every workflow is read, so that a job that has one shows
	// its live state, not its archived summary.
	for all || len(rows) < limit {
		resp, err := tc.ListWorkflow(background, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = '%s'", contract.WorkflowTypeMigration), NextPageToken: token, PageSize: 100,
		})
		if err != nil {
			return c.fail(temporalCode(err), "", "list jobs: %v", err)
		}
		for _, e := range resp.GetExecutions() {
			r := row{Job: strings.TrimPrefix(e.GetExecution().GetWorkflowId(), contract.MigrationWorkflowID("")),
				Started: e.GetStartTime().AsTime(), Closed: e.GetCloseTime() != nil}
			dc := converter.GetDefaultDataConverter()
			fields := e.GetMemo().GetFields()
			_ = dc.FromPayload(fields[contract.MemoState], &r.State)
			_ = dc.FromPayload(fields[contract.MemoAccount], &r.Account)
			_ = dc.FromPayload(fields[contract.MemoSummary], &r.Summary)
			if r.Closed && !contract.Ended(r.State) {
				// Terminated from outside, or reset: no final state recorded.
				r.State = strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
			}
			live[r.Job] = true
			if (account == "" || r.Account == account) && (state == "" || r.State == state) && (all || len(rows) < limit) {
				rows = append(rows, r)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	if all {
		archived, err := archivedRows(jobStore, live)
		if err != nil {
			return c.fail(cli.ExitUnavailable, "", "list archived jobs in the job store %s/%s: %v", jobStore.S3.Endpoint, jobStore.Bucket, err)
		}
		archived = slices.DeleteFunc(archived, func(r row) bool {
			return (account != "" && r.Account != account) || (state != "" && r.State != state)
		})
		rows = mergeRows(rows, archived, limit)
	}
	if c.asJSON {
		if rows == nil {
			rows = []row{}
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
