package migrate_test

import (
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// A destination down for two of page 3's transfers and four probes: the
// job waits (still running, status saying for what since when), probes
// with growing delays, resumes the page by itself and completes with
// every object copied, none failed.
func TestJobWaitsForAStoreThatIsDown(t *testing.T) {
	b := &bucket{objects: 1000, pageSize: 100, down: map[int]int{3: 2}, probeFails: 4}
	env := newEnv(t, b)
	var during []contract.Status
	for _, at := range []time.Duration{20 * time.Second, 40 * time.Second} {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(contract.StatusQuery)
			if err != nil {
				t.Error(err)
				return
			}
			var s contract.Status
			if err := v.Get(&s); err != nil {
				t.Error(err)
			}
			during = append(during, s)
		}, at)
	}
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	if s.State != contract.StateCompleted || s.Copied != 1000 || s.Failed != 0 || s.WaitingFor != "" {
		t.Fatalf("status %+v", s)
	}
	if s.WaitedSeconds < 60 {
		t.Fatalf("waited %.0f s in all; want the probes' backoff (2+4+8+16+32 s, twice in part)", s.WaitedSeconds)
	}
	if len(during) != 2 {
		t.Fatalf("queried %d times", len(during))
	}
	for _, d := range during {
		if d.State != contract.StateRunning || d.WaitingFor != migrate.SideDest || d.WaitingSince == nil || d.WaitingReason != "connection refused" {
			t.Fatalf("status while waiting: %+v", d)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.probes {
		if p.Side != migrate.SideDest || p.Endpoint.Endpoint != "dst:9000" {
			t.Fatalf("probe %+v; want the destination", p)
		}
	}
	// Page 3 ran three times: twice into the outage, then recovering.
	var restarts []int
	for _, in := range b.transfers {
		if in.Seq == 3 {
			restarts = append(restarts, in.Restart)
		}
	}
	if !slices.Equal(restarts, []int{0, 1, 2}) {
		t.Fatalf("page 3 ran with restarts %v; want [0 1 2]", restarts)
	}
}

// The source down for the listing: the job waits, lists the same page
// again once the probe passes, and completes.
func TestJobWaitsForTheSourceWhileListing(t *testing.T) {
	b := &bucket{objects: 500, pageSize: 100, listDown: map[int]int{2: 3}, probeFails: 2}
	env := newEnv(t, b)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	if s.State != contract.StateCompleted || s.Listed != 500 || s.Copied != 500 || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.probes) == 0 || b.probes[0].Side != migrate.SideSource || b.probes[0].Endpoint.Endpoint != "src:9000" {
		t.Fatalf("probes %+v; want the source", b.probes)
	}
	if !slices.Equal(b.listed, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("listed %v", b.listed)
	}
}

// An abort ends a wait: the job ends aborted, the waiting page stops.
func TestJobAbortsWhileWaiting(t *testing.T) {
	b := &bucket{objects: 300, pageSize: 100, down: map[int]int{0: 1, 1: 1, 2: 1}, probeFails: 1 << 30}
	env := newEnv(t, b)
	abortAt(t, env, 10*time.Minute)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	if s.State != contract.StateAborted || s.Failed != 0 || s.WaitingFor != "" || s.WaitedSeconds < 500 {
		t.Fatalf("status %+v", s)
	}
}

func abortAt(t *testing.T, env *testsuite.TestWorkflowEnvironment, at time.Duration) {
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(contract.AbortUpdate, "abort", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Errorf("abort refused: %v", err) }, OnComplete: func(any, error) {},
		})
	}, at)
}
