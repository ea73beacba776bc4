package migrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/migrate"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
	publish "github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func importInput() contract.ImportInput {
	in := jobInput(100)
	in.Job = "imp-files"
	return contract.ImportInput{Import: "imp", Files: in}
}

func TestCatalogImportRebuildsAfterAFullCopy(t *testing.T) {
	env := quietSuite().NewTestWorkflowEnvironment()
	wf.Register(env)
	env.OnWorkflow(contract.WorkflowTypeMigration, mock.Anything, mock.Anything).Return(
		&contract.Status{Job: "imp-files", State: contract.StateCompleted, Counters: migrate.Counters{Listed: 10, Copied: 10}}, nil)
	rebuilt := 0
	env.RegisterActivityWithOptions(func(ctx context.Context, in publish.RebuildInput) (*publish.RebuildResult, error) {
		rebuilt++
		if in.Import != "imp" {
			return nil, errors.New("wrong import " + in.Import)
		}
		return &publish.RebuildResult{Packages: 2, Versions: 3, Files: 10}, nil
	}, activity.RegisterOptions{Name: publish.RebuildMetadataActivity})
	env.ExecuteWorkflow(contract.WorkflowTypeMigrationCatalogImport, importInput())
	var out contract.ImportResult
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if rebuilt != 1 || out.Rebuild.Versions != 3 || out.Files.Copied != 10 {
		t.Fatalf("import %+v, rebuilt %d times", out, rebuilt)
	}
}

func TestCatalogImportWritesNoMetadataAfterFailures(t *testing.T) {
	env := quietSuite().NewTestWorkflowEnvironment()
	wf.Register(env)
	env.OnWorkflow(contract.WorkflowTypeMigration, mock.Anything, mock.Anything).Return(
		&contract.Status{Job: "imp-files", State: contract.StateCompleted, Counters: migrate.Counters{Listed: 10, Copied: 9, Failed: 1}}, nil)
	env.RegisterActivityWithOptions(func(ctx context.Context, in publish.RebuildInput) (*publish.RebuildResult, error) {
		t.Error("metadata rebuilt although an object failed to copy")
		return nil, nil
	}, activity.RegisterOptions{Name: publish.RebuildMetadataActivity})
	env.ExecuteWorkflow(contract.WorkflowTypeMigrationCatalogImport, importInput())
	var app *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != contract.ErrImportIncomplete {
		t.Fatalf("error %v", err)
	}
}

// The two contracts describe the rebuild activity alike.
func TestRebuildTypesMatchPublishContract(t *testing.T) {
	if contract.RebuildMetadataActivity != publish.RebuildMetadataActivity || contract.PublishTaskQueue != publish.TaskQueue {
		t.Fatal("activity or queue names differ")
	}
	want := publish.RebuildResult{Packages: 1, Versions: 2, Files: 3, Bytes: 4, AlreadyPublished: 5, Skipped: []string{"x"}}
	data, _ := json.Marshal(want)
	var mine contract.RebuildCounts
	if err := json.Unmarshal(data, &mine); err != nil {
		t.Fatal(err)
	}
	back, _ := json.Marshal(mine)
	var got publish.RebuildResult
	_ = json.Unmarshal(back, &got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip %+v, want %+v", got, want)
	}
	req, _ := json.Marshal(contract.RebuildRequest{Import: "i"})
	var in publish.RebuildInput
	if err := json.Unmarshal(req, &in); err != nil || in.Import != "i" {
		t.Fatalf("request %s → %+v", req, in)
	}
}
