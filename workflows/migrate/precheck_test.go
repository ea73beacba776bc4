package migrate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	acts "github.com/edgeflow/edgeflow/activities/migrate"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// The first page is listed while the precheck runs, so copying starts one
// round trip sooner; no page is copied before the precheck passes, and a
// failed precheck copies nothing.
func TestFirstPageIsListedDuringThePrecheck(t *testing.T) {
	for _, passes := range []bool{true, false} {
		var mu sync.Mutex
		var events []string
		note := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
		listed := make(chan struct{})
		var once sync.Once
		env := quietSuite().NewTestWorkflowEnvironment()
		wf.Register(env)
		acts.Register(env, &acts.Activities{})
		env.OnActivity(a.RequestSlot, mock.Anything, mock.Anything, mock.Anything).Return(nil)
		env.OnActivity(a.Precheck, mock.Anything, mock.Anything).Return(func(ctx context.Context, in contract.PrecheckInput) error {
			select { // the listing runs meanwhile; sequential code would never list here
			case <-listed:
			case <-time.After(10 * time.Second):
			}
			note("precheck done")
			if !passes {
				return temporal.NewNonRetryableApplicationError("source: listing was denied", contract.ErrPrecheck, nil)
			}
			return nil
		})
		env.OnActivity(a.ListPage, mock.Anything, mock.Anything).Return(func(ctx context.Context, in contract.ListInput) (contract.ListResult, error) {
			note("list")
			once.Do(func() { close(listed) })
			return contract.ListResult{Seq: in.Seq, Count: 10, Bytes: 100, Last: true}, nil
		})
		env.OnActivity(a.TransferPage, mock.Anything, mock.Anything).Return(func(ctx context.Context, in contract.PageInput) (contract.PageReport, error) {
			note("transfer")
			return contract.PageReport{Execution: in.Execution, Seq: in.Seq, Item: in.Item}, nil
		})
		env.OnActivity(a.ArchiveJob, mock.Anything, mock.Anything).Return(nil)
		env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", contract.ReleaseSignal, mock.Anything).Return(nil)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SlotGrantedSignal, nil) }, time.Millisecond)
		env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
		mu.Lock()
		got := events
		mu.Unlock()
		want := []string{"list", "precheck done", "transfer"}
		if !passes {
			want = want[:2]
		}
		if len(got) != len(want) {
			t.Fatalf("precheck passes %v: %v, want %v", passes, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("precheck passes %v: %v, want %v", passes, got, want)
			}
		}
	}
}
