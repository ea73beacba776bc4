// Command compress is the worker pool of the `compress` task queue: minify,
// brotli and gzip (11 and 9, stepping down for large files) and SRI for every
// file. It is CPU-bound; scale it alone (e.g. `docker compose up --scale
// compress=4`). Each process runs several batches at once so bucket I/O
// overlaps, while its CPU limiter keeps no more compressions running than it
// has cores.
package main

import (
	"runtime"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/worker"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/workerhost"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func main() { cli.Execute(newRootCommand()) }

func newRootCommand() *cobra.Command {
	var opts workerhost.Options
	var cfg publishacts.CompressConfig
	cmd := &cobra.Command{
		Use:   "compress",
		Short: "The worker pool of the compress task queue: minify, brotli, gzip and SRI for every file",
		Long: `The worker pool of the compress task queue: minify, brotli 11, gzip 9 (lower
levels for files over 4 MiB, docs/publish.md) and SRI for every file Publish
publishes; a file over 16 MiB is processed as it streams in, never whole in
memory. It is CPU-bound: scale it alone. Each process runs several batches at
once so bucket I/O overlaps, while its CPU limiter keeps no more compressions
running than it has cores (--cpus). It serves until SIGINT or SIGTERM, then lets
its activities in flight finish.`,
		Example: `  compress
  compress --cpus 4 --s3-endpoint minio:9000 --ops-addr 0.0.0.0:8092`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := workerhost.Logger("compress")
			acts, err := cfg.Build(cmd.Context())
			if err != nil {
				return workerhost.Failed(log, err)
			}
			return workerhost.Failed(log, workerhost.Run(opts, log, func(w worker.Worker) {
				publishacts.RegisterCompress(w, acts)
			}))
		},
	}
	opts.RegisterFlags(cmd.Flags(), contract.CompressTaskQueue, 2*runtime.GOMAXPROCS(0), "8092")
	cfg.RegisterFlags(cmd.Flags())
	return cmd
}
