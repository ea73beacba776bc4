// Package workflows holds deterministic workflow code only: no I/O, no wall
// clock, no randomness, no goroutines. Side effects are activities.
package workflows

import (
	"strconv"

	"go.temporal.io/sdk/temporal"
)

// Task queues, one per worker pool.
const (
	PipelineQueue    = "pipeline"
	CompressQueue    = "compress"
	MigrationQueue   = "migration"
	WaitingRoomQueue = "waitingroom"
)

// Search attributes every run is findable by in the Web UI.
var (
	PackageKey = temporal.NewSearchAttributeKeyKeyword("Package")
	VersionKey = temporal.NewSearchAttributeKeyKeyword("Version")
)

// Workflow IDs are derived from domain keys so one version is never processed
// twice at once and a published one is never redone.
func PublishID(name, version string) string { return "publish/" + name + "@" + version }

// BatchID names the child that processes one batch of a version.
func BatchID(name, version string, batch int) string {
	return PublishID(name, version) + "/batch-" + strconv.Itoa(batch)
}

// UpdatesScheduleID is the Schedule that starts PackageUpdates.
const UpdatesScheduleID = "package-updates"
