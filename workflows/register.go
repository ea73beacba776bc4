package workflows

import "go.temporal.io/sdk/worker"

// RegisterPublish registers the publish workflows (they run on the pipeline
// queue; their CPU work is scheduled on the compress queue).
func RegisterPublish(w worker.Registry) {
	w.RegisterWorkflow(PackageUpdates)
	w.RegisterWorkflow(PublishVersion)
	w.RegisterWorkflow(ProcessBatch)
}
