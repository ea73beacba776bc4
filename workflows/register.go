package workflows

// WorkflowRegistry is what workers and replayers have in common.
type WorkflowRegistry interface {
	RegisterWorkflow(w interface{})
}

// RegisterPublish registers the publish workflows (they run on the pipeline
// queue; their CPU work is scheduled on the compress queue).
func RegisterPublish(w WorkflowRegistry) {
	w.RegisterWorkflow(PackageUpdates)
	w.RegisterWorkflow(PublishVersion)
	w.RegisterWorkflow(ProcessBatch)
}
