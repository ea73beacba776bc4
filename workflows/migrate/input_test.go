package migrate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	acts "github.com/edgeflow/edgeflow/activities/migrate"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// A job started by another starter than ours, with settings no store
// accepts, fails at once with the reason, before it asks for a slot: a part
// size of 1048576T once wrapped around to 0 and kept a transfer looping.
func TestJobRefusesInputNoStoreAccepts(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*contract.JobInput)
		want string
	}{
		"part size above 5 GiB": {func(in *contract.JobInput) { in.Settings.PartSize = 1 << 60 }, "--part-size"},
		"negative part size":    {func(in *contract.JobInput) { in.Settings.PartSize = -1 }, "--part-size"},
		"key list with a prefix": {func(in *contract.JobInput) {
			in.KeyList = "keylists/job-1/1.txt"
			in.Source.Prefix = "p/"
		}, "--keys"},
	} {
		t.Run(name, func(t *testing.T) {
			env := quietSuite().NewTestWorkflowEnvironment()
			wf.Register(env)
			acts.Register(env, &acts.Activities{})
			env.OnActivity(a.RequestSlot, mock.Anything, mock.Anything, mock.Anything).Return(nil).Maybe()
			env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", contract.ReleaseSignal, mock.Anything).Return(nil).Maybe()
			in := jobInput(100)
			tc.edit(&in)
			env.ExecuteWorkflow(contract.WorkflowTypeMigration, in)
			var app *temporal.ApplicationError
			if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != contract.ErrMigrationFailed {
				t.Fatalf("error %v, want %s", err, contract.ErrMigrationFailed)
			}
			if !strings.Contains(app.Error(), tc.want) {
				t.Fatalf("error %q does not name %s", app.Error(), tc.want)
			}
			env.AssertNotCalled(t, "RequestSlot", mock.Anything, mock.Anything, mock.Anything)
		})
	}
}
