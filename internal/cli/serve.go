package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
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

// ServeHTTP runs serve (server.Serve or ServeTLS on its listener) until
// ctx ends or serving fails; listening runs once it has started (log the
// address, tell a test it is ready). On ctx's end the server shuts down,
// letting in-flight requests finish within grace.
func ServeHTTP(ctx context.Context, server *http.Server, serve func() error, grace time.Duration, log *slog.Logger, listening func()) error {
	served := make(chan error, 1)
	go func() { served <- serve() }()
	if listening != nil {
		listening()
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "grace", grace)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
