package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// ServerRun is a long-running command's body: it serves until ctx ends
// (SIGINT or SIGTERM), writing its logs to stderr, and calls ready, if
// given, with the address it listens on.
type ServerRun func(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error

// Serve runs a server command (the edge, the gate, the codec server) and
// exits the way every one of them does: 2 after -h or a flag error (the
// flag package has said why), 1 with "name: error" on any other failure,
// and 0 once a signal has shut it down gracefully.
func Serve(name string, run ServerRun) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr, nil)
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(ExitUsage)
		}
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(ExitFailed)
	}
}
