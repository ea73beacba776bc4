// Command migrate starts and controls Migrate jobs: bucket-to-bucket
// copies between S3-compatible stores, exactly once.
//
//	go run ./starters/migrate start --source s3://BUCKET[/PREFIX] --source-endpoint HOST:PORT \
//	    --dest s3://BUCKET[/PREFIX] --dest-endpoint HOST:PORT [--keys FILE] \
//	    [--overwrite never|always|if-different] [--verify] [--dry-run] [--job ID] [--account NAME] \
//	    [--follow | --detach] [--json]
//	go run ./starters/migrate status|pause|resume|abort|redrive JOB
//	go run ./starters/migrate list
//	go run ./starters/migrate report JOB [--format csv|jsonl] [--out FILE|s3://BUCKET/KEY]
//	go run ./starters/migrate split --parts N  (the flags of start)
//	go run ./starters/migrate account [NAME] [--limit N]
//	go run ./starters/migrate import-catalog --source s3://OLD-CDN/ajax/libs/ --source-endpoint HOST:PORT
//
// Credentials come from MIGRATE_SOURCE_ACCESS_KEY, MIGRATE_SOURCE_SECRET_KEY,
// MIGRATE_DEST_ACCESS_KEY and MIGRATE_DEST_SECRET_KEY, or a credentials file
// (--credentials), never from flags; they are sealed with the codec keys
// before they reach Temporal.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
)

const usage = `Usage: migrate COMMAND [flags]

Commands:
  start     start a job and wait for it (--detach returns at once, --follow shows progress)
  status    show a job: state, counts, rate and ETA (--follow to watch it)
  list      list jobs, newest first, with their state (queued ones wait for a slot)
  pause     stop starting new pages; pages in flight finish
  resume    continue a paused job
  abort     stop a job now; pages in flight stop and report what they did
  redrive   retry a job's dead letters (failed objects)
  report    write a job's per-object report: CSV or JSON lines, to a file, stdout or a bucket
  split     split a bucket by prefix into parallel jobs (the flags of start, and --parts N)
  account   show an account's line of jobs; --limit N changes how many run at once
  import-catalog
            import an existing CDN bucket into Publish byte for byte, then publish its versions

Run "migrate COMMAND --help" for the flags of a command.
Credentials: MIGRATE_SOURCE_ACCESS_KEY, MIGRATE_SOURCE_SECRET_KEY, MIGRATE_DEST_ACCESS_KEY,
MIGRATE_DEST_SECRET_KEY, or --credentials FILE with those NAME=VALUE lines. Never flags.
Exit codes: 0 done, 1 the job failed or ended with failed objects, 2 bad usage or input,
3 Temporal unreachable.
`

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		fmt.Fprint(os.Stderr, usage)
		if len(os.Args) < 2 {
			os.Exit(cli.ExitUsage)
		}
		return
	}
	cmd, args := os.Args[1], os.Args[2:]
	commands := map[string]func([]string) int{
		"start": runStart, "split": runSplit, "status": runStatus, "list": runList,
		"pause": runControl("pause"), "resume": runControl("resume"), "abort": runControl("abort"),
		"redrive": runRedrive, "report": runReport, "account": runAccount,
		"import-catalog": runImportCatalog,
	}
	run, ok := commands[cmd]
	if !ok {
		fmt.Fprint(os.Stderr, usage)
		cli.Exit(cli.ExitUsage, "migrate: unknown command %q", cmd)
	}
	background = cli.Trace(background, "edgeflow-migrate-starter", "migrate "+cmd)
	cli.Finish(run(args))
}

// parseArgs parses flags anywhere among the arguments (so "status JOB
// --json" works) and returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, bool) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, false
		}
		if fs.NArg() == 0 {
			return positional, true
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// common are the flags every command has.
type common struct {
	temporal config.Temporal
	asJSON   bool
}

func (c *common) register(fs *flag.FlagSet) {
	c.temporal.RegisterFlags(fs)
	fs.BoolVar(&c.asJSON, "json", false, "print exactly one JSON document on stdout (messages go to stderr)")
}

func (c *common) dial() (client.Client, int) {
	tc, err := c.temporal.Dial(nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "migrate: %v\n", err)
		return nil, cli.ExitUnavailable
	}
	return tc, cli.ExitOK
}

// fail prints an error and returns its exit code; with --json the error is
// also the one JSON document.
func (c *common) fail(code int, job string, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	if c.asJSON {
		cli.PrintJSON(map[string]string{"job": job, "error": msg})
	}
	fmt.Fprintln(os.Stderr, "migrate: "+msg)
	return code
}

// temporalCode maps an error talking to Temporal to an exit code: a job
// that does not exist is bad input; a server that does not answer (gRPC
// Unavailable, or no answer in time) is unreachable; anything else failed.
func temporalCode(err error) int {
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return cli.ExitUsage
	}
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &invalid) {
		return cli.ExitUsage
	}
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	// The SDK turns gRPC statuses into these serviceerror types.
	if errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.Is(err, context.DeadlineExceeded) {
		return cli.ExitUnavailable
	}
	return cli.ExitFailed
}

var background = context.Background()
