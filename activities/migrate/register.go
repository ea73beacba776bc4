package migrate

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// Register registers the pool's activities under the contract's names, the
// names the workflows schedule and histories hold: renaming a Go method
// then cannot strand a run in flight.
func Register(r worker.ActivityRegistry, a *Activities) {
	for _, act := range []struct {
		name string
		fn   any
	}{
		{contract.PrecheckActivity, a.Precheck},
		{contract.ListPageActivity, a.ListPage},
		{contract.TransferPageActivity, a.TransferPage},
		{contract.DeadPagesActivity, a.DeadPages},
		{contract.FindReportsActivity, a.FindReports},
		{contract.RequestSlotActivity, a.RequestSlot},
		{contract.StillRunningActivity, a.StillRunning},
		{contract.ProbeStoreActivity, a.ProbeStore},
		{contract.ArchiveJobActivity, a.ArchiveJob},
	} {
		r.RegisterActivityWithOptions(act.fn, activity.RegisterOptions{Name: act.name})
	}
}
