package migrate

import (
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// Registry is what workers and replayers register workflows on.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// Register registers Migrate's workflows under their contract names.
func Register(r Registry) {
	r.RegisterWorkflowWithOptions(Job, workflow.RegisterOptions{Name: contract.WorkflowTypeMigration})
	r.RegisterWorkflowWithOptions(Page, workflow.RegisterOptions{Name: contract.WorkflowTypeMigrationPage})
	r.RegisterWorkflowWithOptions(Account, workflow.RegisterOptions{Name: contract.WorkflowTypeMigrationAccount})
	r.RegisterWorkflowWithOptions(CatalogImport, workflow.RegisterOptions{Name: contract.WorkflowTypeMigrationCatalogImport})
}
