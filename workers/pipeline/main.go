// Command pipeline is the worker pool of the `pipeline` task queue: the
// publish workflows and their network-bound activities (update checks,
// downloads, extraction, publishing).
package main

import (
	"context"
	"flag"
	"os"

	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/activities"
	"github.com/edgeflow/edgeflow/internal/workerhost"
	"github.com/edgeflow/edgeflow/workflows"
)

func main() {
	fs := flag.NewFlagSet("pipeline", flag.ExitOnError)
	var opts workerhost.Options
	opts.RegisterFlags(fs, workflows.PipelineQueue, 32, "8091")
	var cfg activities.PublishConfig
	cfg.RegisterFlags(fs)
	_ = fs.Parse(os.Args[1:])
	log := workerhost.Logger("pipeline")
	pub, err := cfg.Build(context.Background())
	workerhost.Fatal(log, err)
	log.Info("storage", "stores", pub.String())
	workerhost.Fatal(log, workerhost.Run(opts, log, func(w worker.Worker) {
		workflows.RegisterPublish(w)
		pub.RegisterPipeline(w)
	}))
}
