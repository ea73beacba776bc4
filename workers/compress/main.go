// Command compress is the worker pool of the `compress` task queue: minify,
// brotli 11, gzip 9 and SRI for every file. It is CPU-bound; scale it alone
// (e.g. `docker compose up --scale compress=4`). Each process runs several
// batches at once so bucket I/O overlaps, while its CPU limiter keeps no more
// compressions running than it has cores.
package main

import (
	"context"
	"flag"
	"os"
	"runtime"

	"go.temporal.io/sdk/worker"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/internal/workerhost"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func main() {
	fs := flag.NewFlagSet("compress", flag.ExitOnError)
	var opts workerhost.Options
	opts.RegisterFlags(fs, contract.CompressTaskQueue, 2*runtime.GOMAXPROCS(0), "8092")
	var cfg publishacts.CompressConfig
	cfg.RegisterFlags(fs)
	_ = fs.Parse(os.Args[1:])
	log := workerhost.Logger("compress")
	acts, err := cfg.Build(context.Background())
	workerhost.Fatal(log, err)
	workerhost.Fatal(log, workerhost.Run(opts, log, func(w worker.Worker) {
		publishacts.RegisterCompress(w, acts)
	}))
}
