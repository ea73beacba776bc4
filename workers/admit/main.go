// Command admit is the worker pool of the `admit` task queue: the room
// workflows (one per waiting room). They only keep state, set timers and
// answer queries — the room needs no activities — so one small process
// serves many rooms; run two for availability.
package main

import (
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/workerhost"
	roomwf "github.com/edgeflow/edgeflow/workflows/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

func main() { cli.Execute(newRootCommand()) }

func newRootCommand() *cobra.Command {
	var opts workerhost.Options
	cmd := &cobra.Command{
		Use:   "admit",
		Short: "The worker pool of the admit task queue: the waiting rooms' workflows",
		Long: `The worker pool of the admit task queue: the room workflows, one per waiting room.
They keep state, set timers and answer queries (no activities), so one small
process serves many rooms; run two for availability. It serves until SIGINT or
SIGTERM, then lets its tasks in flight finish.`,
		Example: `  admit
  admit --address temporal.example.com:7233 --namespace rooms --ops-addr 0.0.0.0:8094`,
		Args: cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			log := workerhost.Logger("admit")
			return workerhost.Failed(log, workerhost.Run(opts, log, func(w worker.Worker) {
				roomwf.Register(w)
			}))
		},
	}
	opts.RegisterFlags(cmd.Flags(), contract.TaskQueue, 8, "8094")
	return cmd
}
