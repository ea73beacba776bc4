package migrate_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	acts "github.com/edgeflow/edgeflow/activities/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// grants records the job workflows an account admitted, in order.
type grants struct {
	mu   sync.Mutex
	jobs []string
	gone map[string]bool // workflows that no longer exist
}

func (g *grants) signal(ns, workflowID, runID, name string, arg any) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone[workflowID] {
		return errors.New("workflow not found")
	}
	g.jobs = append(g.jobs, workflowID)
	return nil
}

func (g *grants) list() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.jobs)
}

func queueOf(t *testing.T, env *testsuite.TestWorkflowEnvironment) contract.Queue {
	t.Helper()
	v, err := env.QueryWorkflow(contract.QueueQuery)
	if err != nil {
		t.Fatal(err)
	}
	var q contract.Queue
	if err := v.Get(&q); err != nil {
		t.Fatal(err)
	}
	return q
}

func accountEnv(g *grants, running func([]string) []string) *testsuite.TestWorkflowEnvironment {
	env := quietSuite().NewTestWorkflowEnvironment()
	wf.Register(env)
	acts.Register(env, &acts.Activities{})
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", contract.SlotGrantedSignal, mock.Anything).Return(g.signal)
	env.OnActivity(a.StillRunning, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.RunningInput) ([]string, error) {
		return running(in.WorkflowIDs), nil
	})
	return env
}

func req(job string) contract.SlotRequest {
	return contract.SlotRequest{Job: job, WorkflowID: contract.MigrationWorkflowID(job)}
}

func TestAccountAdmitsAtMostLimitInOrder(t *testing.T) {
	g := &grants{}
	var checked [][]string
	env := accountEnv(g, func(ids []string) []string {
		checked = append(checked, ids)
		// j3 was terminated from outside: it never releases its slot.
		return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == contract.MigrationWorkflowID("j3") })
	})
	step := func(at time.Duration, fn func()) { env.RegisterDelayedCallback(fn, at) }
	step(time.Second, func() {
		for _, j := range []string{"j1", "j2", "j3"} {
			env.SignalWorkflow(contract.AcquireSignal, req(j))
		}
	})
	step(2*time.Second, func() {
		q := queueOf(t, env)
		if !slices.Equal(q.Running, []string{"j1", "j2"}) || !slices.Equal(q.Waiting, []string{"j3"}) || q.Limit != 2 {
			t.Errorf("queue with limit 2: %+v", q)
		}
		env.SignalWorkflow(contract.AcquireSignal, req("j2")) // asking again is answered again
		// A release from an older run of j1 (another workflow) is ignored.
		env.SignalWorkflow(contract.ReleaseSignal, contract.SlotRequest{Job: "j1", WorkflowID: "someone-else"})
	})
	step(3*time.Second, func() {
		if q := queueOf(t, env); !slices.Contains(q.Running, "j1") {
			t.Errorf("a foreign release freed j1's slot: %+v", q)
		}
		env.SignalWorkflow(contract.ReleaseSignal, req("j1"))
	})
	step(4*time.Second, func() {
		env.UpdateWorkflow(contract.SetLimitUpdate, "limit", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Errorf("set-limit: %v", err) }, OnComplete: func(any, error) {},
		}, 3)
		env.UpdateWorkflow(contract.SetLimitUpdate, "bad-limit", &testsuite.TestUpdateCallback{
			OnAccept: func() { t.Error("limit 0 accepted") }, OnReject: func(error) {}, OnComplete: func(any, error) {},
		}, 0)
		env.SignalWorkflow(contract.AcquireSignal, req("j4"))
		env.SignalWorkflow(contract.AcquireSignal, req("j5"))
	})
	step(20*time.Minute, func() {
		// j3 held a slot without running; the check released it for j5.
		q := queueOf(t, env)
		if !slices.Equal(q.Running, []string{"j2", "j4", "j5"}) || len(q.Waiting) != 0 {
			t.Errorf("after the stale check: %+v", q)
		}
		for _, j := range []string{"j2", "j4", "j5"} {
			env.SignalWorkflow(contract.ReleaseSignal, req(j))
		}
	})
	env.ExecuteWorkflow(contract.WorkflowTypeMigrationAccount, contract.AccountInput{Account: "acme", Queue: migrate.JobQueue{Limit: 2}})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("account did not end once idle: %v", env.GetWorkflowError())
	}
	want := []string{"j1", "j2", "j2", "j3", "j4", "j5"}
	got := g.list()
	for i := range want {
		want[i] = contract.MigrationWorkflowID(want[i])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("grants %v\nwant   %v", got, want)
	}
	if len(checked) == 0 {
		t.Fatal("the running jobs were never checked while others waited")
	}
}

func TestAccountPassesOnTheSlotOfAVanishedJob(t *testing.T) {
	g := &grants{gone: map[string]bool{contract.MigrationWorkflowID("gone"): true}}
	env := accountEnv(g, func(ids []string) []string { return ids })
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.AcquireSignal, req("a"))
		env.SignalWorkflow(contract.AcquireSignal, req("gone"))
		env.SignalWorkflow(contract.AcquireSignal, req("b"))
	}, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.ReleaseSignal, req("a")) }, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		if q := queueOf(t, env); !slices.Equal(q.Running, []string{"b"}) {
			t.Errorf("queue %+v; want b running", q)
		}
		env.SignalWorkflow(contract.ReleaseSignal, req("b"))
	}, 3*time.Second)
	env.ExecuteWorkflow(contract.WorkflowTypeMigrationAccount, contract.AccountInput{Account: "acme", Queue: migrate.JobQueue{Limit: 1}})
	if got := g.list(); !slices.Equal(got, []string{contract.MigrationWorkflowID("a"), contract.MigrationWorkflowID("b")}) {
		t.Fatalf("grants %v", got)
	}
}

// Raising the limit while jobs wait admits them from the update handler,
// which waits for each grant's signal to be delivered.
func TestAccountSetLimitAdmitsTheWaiting(t *testing.T) {
	g := &grants{}
	env := accountEnv(g, func(ids []string) []string { return ids })
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.AcquireSignal, req("a"))
		env.SignalWorkflow(contract.AcquireSignal, req("b"))
	}, time.Second)
	var updated contract.Queue
	var updateErr error
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(contract.SetLimitUpdate, "limit", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Errorf("set-limit refused: %v", err) },
			OnComplete: func(v any, err error) {
				updateErr = err
				if q, ok := v.(contract.Queue); ok {
					updated = q
				}
			},
		}, 2)
	}, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		for _, j := range []string{"a", "b"} {
			env.SignalWorkflow(contract.ReleaseSignal, req(j))
		}
	}, 3*time.Second)
	env.ExecuteWorkflow(contract.WorkflowTypeMigrationAccount, contract.AccountInput{Account: "acme", Queue: migrate.JobQueue{Limit: 1}})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("account: %v", env.GetWorkflowError())
	}
	if updateErr != nil || !slices.Equal(updated.Running, []string{"a", "b"}) {
		t.Errorf("set-limit 2 answered %+v, %v; want a and b running", updated, updateErr)
	}
	if got := g.list(); !slices.Equal(got, []string{contract.MigrationWorkflowID("a"), contract.MigrationWorkflowID("b")}) {
		t.Fatalf("grants %v; want a, then b once the limit rose", got)
	}
}
