// Command admit is the worker pool of the `admit` task queue: the room
// workflows (one per waiting room). They only keep state, set timers and
// answer queries — the room needs no activities — so one small process
// serves many rooms; run two for availability.
package main

import (
	"flag"
	"os"

	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/internal/workerhost"
	roomwf "github.com/edgeflow/edgeflow/workflows/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

func main() {
	fs := flag.NewFlagSet("admit", flag.ExitOnError)
	var opts workerhost.Options
	opts.RegisterFlags(fs, contract.TaskQueue, 8, "8094")
	_ = fs.Parse(os.Args[1:])
	log := workerhost.Logger("admit")
	workerhost.Fatal(log, workerhost.Run(opts, log, func(w worker.Worker) {
		roomwf.Register(w)
	}))
}
