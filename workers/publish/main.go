// Command publish is the worker pool of the `publish` task queue: the
// publish workflows and their network-bound activities (update checks,
// downloads, extraction, commits). (The queue's former name, `pipeline`,
// is retired: no worker polls it.)
package main

import (
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/worker"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/workerhost"
	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func main() { cli.Execute(newRootCommand()) }

func newRootCommand() *cobra.Command {
	var opts workerhost.Options
	var cfg publishacts.PublishConfig
	cmd := &cobra.Command{
		Use:   "publish",
		Short: "The worker pool of the publish task queue: Publish's workflows and its network-bound activities",
		Long: `The worker pool of the publish task queue: Publish's workflows and their
network-bound activities (update checks, downloads, extraction, commits). It
serves until SIGINT or SIGTERM, then lets its activities in flight finish.`,
		Example: `  publish
  publish --catalog ./catalog --s3-endpoint minio:9000 --ops-addr 0.0.0.0:8091
  publish --address temporal.example.com:7233 --tls-cert-path client.pem --tls-key-path client-key.pem`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := workerhost.Logger("publish")
			acts, err := cfg.Build(cmd.Context())
			if err != nil {
				return workerhost.Failed(log, err)
			}
			log.Info("storage", "primary", acts.Primary, "mirror", acts.Mirror, "buckets", acts.Buckets)
			return workerhost.Failed(log, workerhost.Run(opts, log, func(w worker.Worker) {
				publish.Register(w)
				publishacts.RegisterPublish(w, acts)
			}))
		},
	}
	opts.RegisterFlags(cmd.Flags(), contract.TaskQueue, 32, "8091")
	cfg.RegisterFlags(cmd.Flags())
	return cmd
}
