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
//	go run ./starters/migrate sync JOB [--every DURATION] [--delete-extraneous] [--pause|--resume|--trigger|--remove]
//	go run ./starters/migrate cutover JOB [--delete-extraneous]
//
// Credentials come from MIGRATE_SOURCE_ACCESS_KEY, MIGRATE_SOURCE_SECRET_KEY,
// MIGRATE_DEST_ACCESS_KEY and MIGRATE_DEST_SECRET_KEY, or a credentials file
// (--credentials), never from flags; they are sealed with the codec keys
// before they reach Temporal.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
)

func main() { cli.Execute(newRootCommand()) }

const exitCodes = `Exit codes: 0 done, 1 the job failed or ended with failed objects, 2 bad usage or input,
3 Temporal unreachable.`

func newRootCommand() *cobra.Command {
	var c common
	root := cli.Group(&cobra.Command{
		Use:   "migrate",
		Short: "Start and control Migrate jobs: bucket-to-bucket copies between S3-compatible stores, exactly once",
		Long: `Start and control Migrate jobs: bucket-to-bucket copies between S3-compatible
stores (or from Google Cloud Storage), exactly once.

Credentials: MIGRATE_SOURCE_ACCESS_KEY, MIGRATE_SOURCE_SECRET_KEY, MIGRATE_DEST_ACCESS_KEY,
MIGRATE_DEST_SECRET_KEY, or --credentials FILE with those NAME=VALUE lines. Never flags.
` + exitCodes,
		Example: `  migrate start --source s3://old-bucket --source-endpoint old.example.com:9000 --dest s3://new-bucket --dest-endpoint new.example.com:9000 --follow
  migrate status m-20260501-abcd --json
  migrate list --state running`,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			background = cli.Trace(background, "edgeflow-migrate-starter", "migrate "+strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "))
		},
	})
	c.register(root.PersistentFlags())
	root.AddCommand(newStartCommand(&c), newSplitCommand(&c), newStatusCommand(&c), newListCommand(&c),
		newControlCommand(&c, "pause", "Stop starting new pages; pages in flight finish"),
		newControlCommand(&c, "resume", "Continue a paused job"),
		newControlCommand(&c, "abort", "Stop a job now; pages in flight stop and report what they did"),
		newRedriveCommand(&c), newReportCommand(&c), newAccountCommand(&c), newImportCatalogCommand(&c))
	root.AddCommand(syncCommands(&c)...)
	return root
}

// command is a subcommand whose body returns an exit code.
func command(use, short, long, example string, args cobra.PositionalArgs, body func(args []string) int) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Long: long, Example: example, Args: args,
		RunE: func(_ *cobra.Command, args []string) error { return cli.Code(body(args)) }}
}

// common are the flags every command has.
type common struct {
	temporal config.Temporal
	asJSON   bool
}

func (c *common) register(fs *pflag.FlagSet) {
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
