package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/migrate"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// overTheWire is err as the starter's client sees it: a failure, encoded
// by the worker and decoded again.
func overTheWire(err error) error {
	fc := temporal.GetDefaultFailureConverter()
	return fc.FailureToError(fc.ErrorToFailure(err))
}

// refusals sends the updates to a workflow one second in and returns the
// refusal of each, by update ID.
func refusals(env *testsuite.TestWorkflowEnvironment, updates [][2]string, args ...any) map[string]error {
	refused := map[string]error{}
	env.RegisterDelayedCallback(func() {
		for _, u := range updates {
			id := u[1]
			env.UpdateWorkflow(u[0], id, &testsuite.TestUpdateCallback{
				OnAccept: func() {}, OnReject: func(err error) { refused[id] = err }, OnComplete: func(any, error) {},
			}, args...)
		}
	}, time.Second)
	return refused
}

// Each refusal of pause, resume, abort, redrive and set-limit reaches the
// starter as its contract type and exits 2 (bad input), whatever its words.
func TestControlRefusalsExitAsBadInput(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
	env := suite.NewTestWorkflowEnvironment()
	wf.Register(env)
	env.RegisterActivityWithOptions(func(context.Context, string, contract.SlotRequest) error { return nil },
		activity.RegisterOptions{Name: contract.RequestSlotActivity})
	// The aborted job archives its summary as it ends.
	env.RegisterActivityWithOptions(func(context.Context, contract.Status) error { return nil },
		activity.RegisterOptions{Name: contract.ArchiveJobActivity})
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", contract.ReleaseSignal, mock.Anything).Return(nil)
	// A dry run waiting in its account's line (no slot is ever granted).
	refused := refusals(env, [][2]string{
		{contract.PauseUpdate, "pause"},
		{contract.ResumeUpdate, "resume"},
		{contract.RedriveUpdate, "redrive"},
		{contract.AbortUpdate, "abort"},
		{contract.AbortUpdate, "abort-again"},
	})
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, contract.JobInput{Job: "j", DryRun: true,
		Source: contract.Endpoint{Endpoint: "src:9000", Location: migrate.Location{Bucket: "src"}},
		Dest:   contract.Endpoint{Endpoint: "dst:9000", Location: migrate.Location{Bucket: "dst"}}})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if err := refused["abort"]; err != nil {
		t.Fatalf("abort of a queued job refused: %v", err)
	}

	account := suite.NewTestWorkflowEnvironment()
	wf.Register(account)
	limit := refusals(account, [][2]string{{contract.SetLimitUpdate, "limit-0"}}, 0)
	account.ExecuteWorkflow(contract.WorkflowTypeMigrationAccount, contract.AccountInput{Account: "a"})
	refused["limit-0"] = limit["limit-0"]

	for id, want := range map[string]string{
		"pause": contract.ErrNotRunning, "resume": contract.ErrNotPaused, "redrive": contract.ErrNothingToRedrive,
		"abort-again": contract.ErrJobEnded, "limit-0": contract.ErrInvalidLimit,
	} {
		err := refused[id]
		if err == nil {
			t.Errorf("%s: not refused", id)
			continue
		}
		err = overTheWire(err)
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || app.Type() != want {
			t.Errorf("%s: refused with %v, want type %s", id, err, want)
		}
		if code := controlCode(err); code != cli.ExitUsage {
			t.Errorf("%s (%v): exit %d, want %d", id, err, code, cli.ExitUsage)
		}
	}
}

// Exit codes come from error types, never from words in a message.
func TestExitCodesByErrorType(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		code int
	}{
		{"job gone", serviceerror.NewNotFound("workflow execution already completed"), cli.ExitUsage},
		{"server down", fmt.Errorf("update: %w", serviceerror.NewUnavailable("connection refused")), cli.ExitUnavailable},
		{"no answer in time", serviceerror.NewDeadlineExceeded("context deadline exceeded"), cli.ExitUnavailable},
		{"our own deadline", fmt.Errorf("wait: %w", context.DeadlineExceeded), cli.ExitUnavailable},
		{"a job that failed", overTheWire(temporal.NewNonRetryableApplicationError("migration j failed", contract.ErrMigrationFailed, nil)), cli.ExitFailed},
		// Words the old matching took for a refusal or an outage.
		{"words alone", overTheWire(temporal.NewApplicationError("bucket logs-Unavailable exists already; only a few objects copied", "Other")), cli.ExitFailed},
	} {
		if code := controlCode(c.err); code != c.code {
			t.Errorf("%s (%v): exit %d, want %d", c.name, c.err, code, c.code)
		}
	}
}
