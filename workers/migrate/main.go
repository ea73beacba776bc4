// Command migrate is the worker pool of the `migrate` task queue: the job,
// page and account workflows of Migrate, the listings and the transfers.
// Transfers wait on the network, not the CPU, so one process runs many at
// once. It opens sealed job credentials with the codec keys (CODEC_KEYS,
// CODEC_KEYS_FILE, or the development key file `make run` creates).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/worker"

	acts "github.com/edgeflow/edgeflow/activities/migrate"
	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/workerhost"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

func main() { cli.Execute(newRootCommand()) }

func newRootCommand() *cobra.Command {
	var opts workerhost.Options
	var jobs migrate.JobStoreConfig
	var perAccount int
	var accountBandwidth, accountRequests string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "The worker pool of the migrate task queue: Migrate's jobs, listings and transfers",
		Long: `The worker pool of the migrate task queue: the job, page and account workflows
of Migrate, the listings and the transfers. Transfers wait on the network, so
one process runs many at once. It opens the jobs' sealed credentials with the
codec keys (CODEC_KEYS, CODEC_KEYS_FILE, or the development key file make run
creates). It serves until SIGINT or SIGTERM, then lets its activities in flight
finish.`,
		Example: `  migrate
  migrate --jobs-per-account 5 --s3-endpoint minio:9000 --ops-addr 0.0.0.0:8093
  MIGRATE_ACCOUNT_MAX_BANDWIDTH=200MiB MIGRATE_ACCOUNT_MAX_REQUESTS=500 migrate`,
		Args: cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			budget, err := accountLimits(accountBandwidth, accountRequests)
			if err != nil {
				return err
			}
			log := workerhost.Logger("migrate")
			return workerhost.Failed(log, serve(log, opts, jobs, perAccount, budget))
		},
	}
	opts.RegisterFlags(cmd.Flags(), contract.TaskQueue, 32, "8093")
	jobs.RegisterFlags(cmd.Flags())
	cmd.Flags().IntVar(&perAccount, "jobs-per-account", config.EnvInt("MIGRATE_JOBS_PER_ACCOUNT", migrate.DefaultJobLimit),
		"jobs of one account that run at once; the others wait in line (env MIGRATE_JOBS_PER_ACCOUNT)")
	cmd.Flags().StringVar(&accountBandwidth, "account-max-bandwidth", config.Env(envAccountBandwidth, ""),
		"bytes a second all jobs of one account read from their sources together, e.g. 200MiB (env "+envAccountBandwidth+"; the same on every worker)")
	cmd.Flags().StringVar(&accountRequests, "account-max-requests", config.Env(envAccountRequests, ""),
		"requests a second all jobs of one account send to their sources together (env "+envAccountRequests+"; the same on every worker)")
	return cmd
}

const (
	envAccountBandwidth = "MIGRATE_ACCOUNT_MAX_BANDWIDTH"
	envAccountRequests  = "MIGRATE_ACCOUNT_MAX_REQUESTS"
)

// accountLimits reads an account's budget on its sources (empty: none).
func accountLimits(bandwidth, requests string) (migrate.Limits, error) {
	var l migrate.Limits
	var err error
	if bandwidth != "" {
		if l.MaxBandwidth, err = migrate.ParseBandwidth(bandwidth); err != nil {
			return l, cli.Fail(cli.ExitUsage, "--account-max-bandwidth (%s): %v", envAccountBandwidth, err)
		}
	}
	if requests != "" {
		if l.MaxRequests, err = migrate.ParseRequests(requests); err != nil {
			return l, cli.Fail(cli.ExitUsage, "--account-max-requests (%s): %v", envAccountRequests, err)
		}
	}
	return l, nil
}

func serve(log *slog.Logger, opts workerhost.Options, jobs migrate.JobStoreConfig, perAccount int, budget migrate.Limits) error {
	keys, err := keyring.Codec.Load()
	if err != nil {
		return fmt.Errorf("codec keys (they open the jobs' sealed credentials): %w", err)
	}
	store, err := jobs.Open()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = store.Ensure(ctx)
	cancel()
	if err != nil {
		return err
	}
	// Jobs queue at their account, and accounts check on their jobs, through
	// this client; the worker's own connection is workerhost's.
	c, err := opts.Temporal.Dial(log)
	if err != nil {
		return err
	}
	defer c.Close()
	log.Info("migrate worker", "jobStore", jobs.S3.Endpoint+"/"+jobs.Bucket, "codecKeys", keys.IDs(), "jobsPerAccount", perAccount, "accountBudget", budget.String())
	return workerhost.Run(opts, log, func(w worker.Worker) {
		wf.Register(w)
		acts.Register(w, &acts.Activities{Keys: keys, Jobs: store, Temporal: c, JobsPerAccount: perAccount, AccountLimits: budget, Metrics: acts.Metrics()})
	})
}
