// Command publish is the worker pool of the `publish` task queue: the
// publish workflows and their network-bound activities (update checks,
// downloads, extraction, commits). It also serves the queue's former name,
// `pipeline`, so runs started before the rename finish.
package main

import (
	"context"
	"flag"
	"os"

	"go.temporal.io/sdk/worker"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/internal/workerhost"
	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func main() {
	fs := flag.NewFlagSet("publish", flag.ExitOnError)
	var opts workerhost.Options
	opts.RegisterFlags(fs, contract.TaskQueue, 32, "8091")
	var cfg publishacts.PublishConfig
	cfg.RegisterFlags(fs)
	_ = fs.Parse(os.Args[1:])
	log := workerhost.Logger("publish")
	acts, err := cfg.Build(context.Background())
	workerhost.Fatal(log, err)
	log.Info("storage", "primary", acts.Primary, "mirror", acts.Mirror, "buckets", acts.Buckets)
	workerhost.Fatal(log, workerhost.Run(opts, log, func(w worker.Worker) {
		publish.Register(w)
		publishacts.RegisterPublish(w, acts)
	}))
}
