package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/signal"
	"syscall"
	"time"
)

// ServeContext is the context a server command (the edge, the gate, the
// console, the codec server) serves in: ctx, ended by SIGINT or SIGTERM,
// after which the server shuts down gracefully and the command returns nil
// (exit 0).
func ServeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
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
