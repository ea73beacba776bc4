package publish_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// pollStep is what one poll of the fake feed answers.
type pollStep struct {
	res contract.FollowResult
	err error
}

// feedFake is the FollowRegistry activity and the checks a follower starts,
// as a test scripts them.
type feedFake struct {
	env   *testsuite.TestWorkflowEnvironment
	steps []pollStep // in order; past the end: nothing new, after the wait
	// checkTakes is how long each check (by ID) runs; default none.
	checkTakes map[string]time.Duration

	mu     sync.Mutex
	since  []string    // since of each poll
	at     []time.Time // when each poll began (workflow time)
	checks []string    // "ID: names"
}

func newFollowerEnv(t *testing.T, f *feedFake) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	// The failing polls are the test's: no log of them.
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError + 1}))))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: contract.RegistryFollowerWorkflowID(contract.RegistryNPM), TaskQueue: contract.TaskQueue})
	publish.Register(env)
	f.env = env
	env.RegisterActivityWithOptions(f.poll, activity.RegisterOptions{Name: contract.FollowRegistryActivity})
	// Every poll takes a second of workflow time (a long-poll's wait).
	env.OnActivity(contract.FollowRegistryActivity, mock.Anything, mock.Anything).Return(f.poll).After(time.Second)
	env.OnWorkflow(publish.PackageUpdates, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in contract.UpdatesInput) (*contract.UpdatesStats, error) {
			id := workflow.GetInfo(ctx).WorkflowExecution.ID
			f.mu.Lock()
			f.checks = append(f.checks, id+": "+strings.Join(in.Only, ","))
			takes := f.checkTakes[id]
			f.mu.Unlock()
			if takes > 0 {
				if err := workflow.Sleep(ctx, takes); err != nil {
					return nil, err
				}
			}
			return &contract.UpdatesStats{Checked: len(in.Only)}, nil
		})
	return env
}

func (f *feedFake) poll(ctx context.Context, in contract.FollowInput) (*contract.FollowResult, error) {
	f.mu.Lock()
	i := len(f.since)
	f.since = append(f.since, in.Since)
	f.at = append(f.at, f.env.Now())
	f.mu.Unlock()
	if i < len(f.steps) {
		step := f.steps[i]
		if step.err != nil {
			return nil, step.err
		}
		return &step.res, nil
	}
	return &contract.FollowResult{LastSeq: in.Since}, nil
}

func (f *feedFake) checksStarted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.checks...)
}

// runFollower runs the follower from in until its history is made to look
// full at stopAt (workflow time), and returns the input it continued with.
func runFollower(t *testing.T, env *testsuite.TestWorkflowEnvironment, in contract.FollowerInput, stopAt time.Duration) contract.FollowerInput {
	t.Helper()
	env.RegisterDelayedCallback(func() { env.SetCurrentHistoryLength(1 << 20) }, stopAt)
	env.ExecuteWorkflow(publish.RegistryFollower, in)
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the follower ended with %v, want continue-as-new", err)
	}
	var next contract.FollowerInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	return next
}

func checkID(n int) string { return contract.FollowerCheckWorkflowID(contract.RegistryNPM, n) }

// A poll that finds catalog packages starts their check at once, in one
// check; a poll that finds none starts nothing; the sequence moves on with
// every poll and is what a continue-as-new carries.
func TestFollowerChecksChangedPackagesAtOnce(t *testing.T) {
	f := &feedFake{steps: []pollStep{
		{res: contract.FollowResult{LastSeq: "3", Names: []string{"lib-a", "lib-b"}, Changes: 3}},
		{res: contract.FollowResult{LastSeq: "5", Changes: 2}}, // other packages only
	}}
	env := newFollowerEnv(t, f)
	next := runFollower(t, env, contract.FollowerInput{Registry: contract.RegistryNPM, PollWait: time.Second}, time.Minute)
	if got, want := f.checksStarted(), []string{checkID(1) + ": lib-a,lib-b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("checks %v, want %v", got, want)
	}
	if f.since[0] != "" || f.since[1] != "3" || f.since[2] != "5" {
		t.Errorf("polls from %v", f.since)
	}
	if next.Since != "5" || next.Checks != 1 || next.Stats.Changes != 5 || next.Stats.Changed != 2 || next.Stats.Checks != 1 || len(next.Dirty) != 0 || next.Stats.ContinuedAsNew != 1 {
		t.Errorf("continued with %+v", next)
	}
}

// A package that changes again while its check runs gets exactly one more
// check, when that one ends: a burst makes one check, and no change is lost.
func TestFollowerChecksAPackageOnceAtATime(t *testing.T) {
	f := &feedFake{
		steps: []pollStep{
			{res: contract.FollowResult{LastSeq: "1", Names: []string{"lib-a"}}},
			{res: contract.FollowResult{LastSeq: "2", Names: []string{"lib-a", "lib-b"}}},
			{res: contract.FollowResult{LastSeq: "3", Names: []string{"lib-a"}}},
		},
		checkTakes: map[string]time.Duration{checkID(1): time.Minute},
	}
	env := newFollowerEnv(t, f)
	var during contract.FollowerStatus
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(contract.ProgressQuery)
		if err == nil {
			err = v.Get(&during)
		}
		if err != nil {
			t.Error(err)
		}
	}, 30*time.Second)
	next := runFollower(t, env, contract.FollowerInput{Registry: contract.RegistryNPM, PollWait: time.Second}, 5*time.Minute)
	want := []string{checkID(1) + ": lib-a", checkID(2) + ": lib-b", checkID(3) + ": lib-a"}
	if got := f.checksStarted(); !reflect.DeepEqual(got, want) {
		t.Errorf("checks %v, want %v", got, want)
	}
	if !reflect.DeepEqual(during.Checking, []string{"lib-a"}) || !reflect.DeepEqual(during.Dirty, []string{"lib-a"}) || during.Since != "3" {
		t.Errorf("status while lib-a's check ran: %+v", during)
	}
	if next.Since != "3" || len(next.Dirty) != 0 || next.Checks != 3 {
		t.Errorf("continued with %+v", next)
	}
}

// A feed that fails or stalls is retried after 1, 2, 4, 8 s, from the same
// sequence; the follower says it is stalled meanwhile, and says so no more
// once a poll succeeds.
func TestFollowerBacksOffAFailingFeed(t *testing.T) {
	stalled := errors.New("registry changes feed stalled: no answer within 45s")
	f := &feedFake{steps: []pollStep{
		{res: contract.FollowResult{LastSeq: "10"}},
		{err: stalled}, {err: stalled}, {err: stalled}, {err: stalled},
		{res: contract.FollowResult{LastSeq: "12", Names: []string{"lib-a"}}},
	}}
	env := newFollowerEnv(t, f)
	var during contract.FollowerStatus
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(contract.ProgressQuery)
		if err == nil {
			err = v.Get(&during)
		}
		if err != nil {
			t.Error(err)
		}
	}, 5*time.Second)
	next := runFollower(t, env, contract.FollowerInput{Registry: contract.RegistryNPM, PollWait: time.Second}, 2*time.Minute)
	var gaps []string
	for i := 2; i <= 5; i++ {
		gaps = append(gaps, f.at[i].Sub(f.at[i-1]).Round(time.Second).String())
	}
	// Each poll takes its second, then the back-off.
	if got := strings.Join(gaps, " "); got != "2s 3s 5s 9s" {
		t.Errorf("polls %s apart, want 2s 3s 5s 9s (a second's poll, then 1, 2, 4, 8 s back-off)", got)
	}
	for i := 1; i <= 5; i++ {
		if f.since[i] != "10" {
			t.Errorf("poll %d from %q, want the last sequence 10", i, f.since[i])
		}
	}
	if during.StalledSince.IsZero() || !strings.Contains(during.LastError, "stalled") || during.RetryAt.Before(during.StalledSince) {
		t.Errorf("status while stalled: %+v", during)
	}
	if next.Stats.Failures != 4 || next.Since != "12" || next.Checks != 1 {
		t.Errorf("continued with %+v", next)
	}
	if got := f.checksStarted(); len(got) != 1 {
		t.Errorf("checks %v", got)
	}
}

// A follower continued as new goes on from the sequence it carried, first
// checking the packages that changed during the last run's final checks.
func TestFollowerResumesFromItsInput(t *testing.T) {
	f := &feedFake{}
	env := newFollowerEnv(t, f)
	next := runFollower(t, env, contract.FollowerInput{Registry: contract.RegistryNPM, Since: "41", Dirty: []string{"lib-x"}, Checks: 6,
		Stats: contract.FollowerStats{Polls: 100}, PollWait: time.Second}, time.Minute)
	if got, want := f.checksStarted(), []string{checkID(7) + ": lib-x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("checks %v, want %v", got, want)
	}
	if f.since[0] != "41" {
		t.Errorf("first poll from %q, want 41", f.since[0])
	}
	if next.Since != "41" || next.Checks != 7 || len(next.Dirty) != 0 || next.Stats.Polls <= 100 || next.PollWait != time.Second {
		t.Errorf("continued with %+v", next)
	}
}
