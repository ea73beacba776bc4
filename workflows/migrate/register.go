package migrate

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// Register registers Migrate's workflows under their contract names.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(Job, workflow.RegisterOptions{Name: contract.WorkflowTypeMigration})
	// A sync run is a job's run under a type of its own (JobInput.Sync).
	r.RegisterWorkflowWithOptions(Job, workflow.RegisterOptions{Name: contract.WorkflowTypeMigrationSync})
	r.RegisterWorkflowWithOptions(Page, workflow.RegisterOptions{Name: contract.WorkflowTypeMigrationPage})
	r.RegisterWorkflowWithOptions(Account, workflow.RegisterOptions{Name: contract.WorkflowTypeMigrationAccount})
	r.RegisterWorkflowWithOptions(CatalogImport, workflow.RegisterOptions{Name: contract.WorkflowTypeMigrationCatalogImport})
}
