// Command devstack is what `make run` runs: the whole system on one machine,
// in the foreground. It starts the Temporal dev server (Web UI, SQLite file so
// runs survive a restart, search attributes registered), MinIO and Redis,
// creates the buckets and the development key files, starts every worker pool,
// the edge and the gate (in front of a small demo origin) as child processes
// with prefixed logs, creates (or updates) the package-update Schedule and
// triggers it once, and creates the demo waiting room. It supervises the
// workers, the edge and the gate: one that dies is restarted (see
// devstack.Supervisor); Temporal, MinIO or Redis dying, or a crash loop, stops
// the stack. Ctrl-C stops the children in order: the edge, gate and workers
// first (they drain), then Redis, MinIO and Temporal.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/devstack"
)

var outMu sync.Mutex

// prefixWriter writes each line of a child's output with its name in front.
func prefixWriter(name, color string) io.Writer {
	r, w := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			outMu.Lock()
			fmt.Printf("\033[%sm%-9s|\033[0m %s\n", color, name, sc.Text())
			outMu.Unlock()
		}
		// A line too long to scan must not block the child's writes.
		_, _ = io.Copy(os.Stdout, r)
	}()
	return w
}

func say(format string, args ...any) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Printf("\033[1mdevstack |\033[0m "+format+"\n", args...)
}

func main() { cli.Execute(newRootCommand()) }

func newRootCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "devstack",
		Short: "The whole system on one machine, in the foreground: what make run runs",
		Long: `The whole system on one machine, in the foreground. It starts the Temporal dev
server (Web UI, SQLite file so runs survive a restart), MinIO and Redis, creates
the buckets and the development key files, starts every worker pool, the edge and
the gate (in front of a small demo origin) as supervised child processes with
prefixed logs, creates the package-update Schedule and the demo waiting room.
Ctrl-C stops the children in order. Settings come from the environment (see the
configuration table in docs/operate.md).`,
		Example: `  make run
  ./bin/devstack`,
		Args: cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := run(); err != nil {
				say("error: %v", err)
				return cli.Code(cli.ExitFailed)
			}
			return nil
		},
	}
}

func run() error {
	root, err := devstack.RepoRoot()
	if err != nil {
		return err
	}
	c, err := devstack.LoadStackConfig(root)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return devstack.RunStack(ctx, c, devstack.Output{Say: say, Logs: prefixWriter})
}
