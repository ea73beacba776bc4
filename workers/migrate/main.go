// Command migrate is the worker pool of the `migrate` task queue: the job,
// page and account workflows of Migrate, the listings and the transfers.
// Transfers wait on the network, not the CPU, so one process runs many at
// once. It opens sealed job credentials with the codec keys (CODEC_KEYS,
// CODEC_KEYS_FILE, or the development key file `make run` creates).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"go.temporal.io/sdk/worker"

	acts "github.com/edgeflow/edgeflow/activities/migrate"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/workerhost"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

func main() {
	fs := flag.NewFlagSet("migrate", flag.ExitOnError)
	var opts workerhost.Options
	opts.RegisterFlags(fs, contract.TaskQueue, 32, "8093")
	var jobs migrate.JobStoreConfig
	jobs.RegisterFlags(fs)
	perAccount := fs.Int("jobs-per-account", config.EnvInt("MIGRATE_JOBS_PER_ACCOUNT", migrate.DefaultJobLimit),
		"jobs of one account that run at once; the others wait in line (env MIGRATE_JOBS_PER_ACCOUNT)")
	_ = fs.Parse(os.Args[1:])
	log := workerhost.Logger("migrate")

	keys, err := keyring.Codec.Load()
	if err != nil {
		workerhost.Fatal(log, fmt.Errorf("codec keys (they open the jobs' sealed credentials): %w", err))
	}
	store, err := jobs.Open()
	workerhost.Fatal(log, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = store.Ensure(ctx)
	cancel()
	workerhost.Fatal(log, err)
	// Jobs queue at their account, and accounts check on their jobs, through
	// this client; the worker's own connection is workerhost's.
	c, err := opts.Temporal.Dial(log)
	workerhost.Fatal(log, err)
	defer c.Close()
	log.Info("migrate worker", "jobStore", jobs.S3.Endpoint+"/"+jobs.Bucket, "codecKeys", keys.IDs(), "jobsPerAccount", *perAccount)
	workerhost.Fatal(log, workerhost.Run(opts, log, func(w worker.Worker) {
		wf.Register(w)
		acts.Register(w, &acts.Activities{Keys: keys, Jobs: store, Temporal: c, JobsPerAccount: *perAccount, Metrics: acts.Metrics()})
	}))
}
