// Package workerhost is the shared main of every worker pool: flags, the
// Temporal connection, the ops endpoint (/healthz, and /metrics for
// Prometheus), tracing, and a graceful stop that lets in-flight activities
// finish.
package workerhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/logging"
	"github.com/edgeflow/edgeflow/internal/metrics"
	"github.com/edgeflow/edgeflow/internal/tracing"
)

// Options are the flags every pool has.
type Options struct {
	Temporal           config.Temporal
	TaskQueue          string
	MaxActivities      int
	MaxWorkflowTasks   int
	MaxActivityPollers int
	HealthAddr         string // --ops-addr
	StopTimeout        time.Duration
}

// RegisterFlags adds the pool flags to fs with defaults for this pool.
func (o *Options) RegisterFlags(fs *pflag.FlagSet, queue string, maxActivities int, healthPort string) {
	o.Temporal.RegisterFlags(fs)
	fs.StringVar(&o.TaskQueue, "task-queue", config.Env("TASK_QUEUE", queue), "task queue this pool serves (env TASK_QUEUE)")
	fs.IntVar(&o.MaxActivities, "max-activities", config.EnvInt("MAX_ACTIVITIES", maxActivities), "activities run at once (env MAX_ACTIVITIES)")
	fs.IntVar(&o.MaxWorkflowTasks, "max-workflow-tasks", config.EnvInt("MAX_WORKFLOW_TASKS", 64), "workflow tasks run at once (env MAX_WORKFLOW_TASKS)")
	fs.IntVar(&o.MaxActivityPollers, "activity-pollers", config.EnvInt("ACTIVITY_POLLERS", 4), "concurrent activity task polls (env ACTIVITY_POLLERS)")
	fs.StringVar(&o.HealthAddr, "ops-addr", config.Env("HEALTH_ADDR", "127.0.0.1:"+healthPort), "ops endpoint address: /healthz and /metrics; empty disables it (env HEALTH_ADDR)")
	config.Alias(fs, "ops-addr", "health-addr")
	fs.DurationVar(&o.StopTimeout, "stop-timeout", 2*time.Minute, "how long in-flight activities may run after a stop signal")
}

// Logger is the process logger (internal/logging): text, or JSON when
// LOG_FORMAT=json, secrets redacted.
func Logger(component string) *slog.Logger { return logging.New(component, os.Stderr) }

// Run connects, lets register add workflows and activities, serves until
// SIGINT/SIGTERM, then stops polling and waits for in-flight work.
func Run(o Options, log *slog.Logger, register func(worker.Worker)) error {
	shutdownTracing, err := tracing.Setup(context.Background(), "edgeflow-"+o.TaskQueue)
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdownTracing(ctx)
	}()
	c, err := o.Temporal.Dial(log)
	if err != nil {
		return err
	}
	defer c.Close()
	// A worker the SDK stopped for good must take its process down, so that
	// health checks and supervisors see it instead of a healthy-looking idler.
	fatal := make(chan error, 1)
	opts := worker.Options{
		OnFatalError: func(err error) {
			select {
			case fatal <- err:
			default:
			}
		},
		MaxConcurrentActivityExecutionSize:     o.MaxActivities,
		MaxConcurrentWorkflowTaskExecutionSize: o.MaxWorkflowTasks,
		MaxConcurrentActivityTaskPollers:       o.MaxActivityPollers,
		WorkerStopTimeout:                      o.StopTimeout,
	}
	w := worker.New(c, o.TaskQueue, opts)
	register(w)

	var ready atomic.Bool
	health := "off"
	if o.HealthAddr != "" {
		ops, err := metrics.ServeOps(o.HealthAddr, map[string]http.Handler{"/healthz": healthHandler(c, o.TaskQueue, &ready)}, log)
		if err != nil {
			return fmt.Errorf("health endpoint %s: %w", o.HealthAddr, err)
		}
		health = ops.Addr // the port chosen, for HEALTH_ADDR=host:0
		defer ops.Close()
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker on %s: %w", o.TaskQueue, err)
	}
	ready.Store(true)
	log.Info("worker started", "taskQueue", o.TaskQueue, "temporal", o.Temporal.HostPort,
		"namespace", o.Temporal.Namespace, "maxActivities", o.MaxActivities, "health", health,
		"metrics", metricsURL(health), "tracing", tracing.Enabled())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-fatal:
		ready.Store(false)
		return fmt.Errorf("worker on %s stopped: %w", o.TaskQueue, err)
	}
	ready.Store(false)
	log.Info("stopping: no new tasks; waiting for in-flight activities", "timeout", o.StopTimeout)
	w.Stop()
	log.Info("stopped")
	return nil
}

// metricsURL is where the ops endpoint serves /metrics.
func metricsURL(health string) string {
	if health == "off" {
		return "off"
	}
	return "http://" + health + "/metrics"
}

func healthHandler(c client.Client, queue string, ready *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		status := map[string]any{"taskQueue": queue, "worker": ready.Load()}
		code := http.StatusOK
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			status["temporal"] = err.Error()
			code = http.StatusServiceUnavailable
		} else {
			status["temporal"] = "ok"
		}
		if !ready.Load() {
			code = http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(status)
	})
}

// Failed logs err, as every record of the process is logged, and returns
// the error that ends the command with status 1 once its deferred calls
// have run; nil (and a cancelled context) end it with 0.
func Failed(log *slog.Logger, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return nil
	}
	log.Error(err.Error())
	return cli.Code(cli.ExitFailed)
}
