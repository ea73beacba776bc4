package publish_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// replies records the outcomes a lane sends the checks waiting on it.
type replies struct {
	mu  sync.Mutex
	got []string // "check name@version outcome"
}

func (r *replies) mock(env *testsuite.TestWorkflowEnvironment) {
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", contract.VersionDoneSignal, mock.Anything).Return(
		func(_, id, _, _ string, v any) error {
			o := v.(contract.VersionOutcome)
			r.mu.Lock()
			defer r.mu.Unlock()
			r.got = append(r.got, id+" "+o.Name+"@"+o.Version+" "+o.Outcome)
			return nil
		})
}

func (r *replies) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func entries(replyTo string, versions ...string) []contract.LaneEntry {
	var out []contract.LaneEntry
	for _, v := range versions {
		e := contract.LaneEntry{VersionRef: contract.VersionRef{PackageRef: contract.PackageRef{Name: "lib"}, Version: v}}
		if replyTo != "" {
			e.ReplyTo = []string{replyTo}
		}
		out = append(out, e)
	}
	return out
}

func laneVersions(replyTo string, versions ...string) contract.LaneVersions {
	msg := contract.LaneVersions{ReplyTo: replyTo}
	for _, e := range entries("", versions...) {
		msg.Versions = append(msg.Versions, e.VersionRef)
	}
	return msg
}

// A lane runs its versions one after another in order; a failed one does
// not stop the next, and each waiting check hears how its versions ended.
func TestPackageLaneRunsInOrder(t *testing.T) {
	env, _ := newEnv(t)
	children := &versionChildren{outcome: func(ref contract.VersionRef) (*contract.PublishOutput, error) {
		switch ref.Version {
		case "1.1.0":
			return nil, errors.New("lib@1.1.0: materialize: store down")
		case "1.2.0":
			return &contract.PublishOutput{AlreadyPublished: true}, nil
		}
		return &contract.PublishOutput{}, nil
	}}
	children.mock(env)
	var r replies
	r.mock(env)
	env.ExecuteWorkflow(publish.PackageLane, contract.LaneInput{Name: "lib", Queue: entries("check-1", "1.0.0", "1.1.0", "1.2.0", "1.3.0")})
	var st contract.LaneStats
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if st.Published != 2 || st.AlreadyPublished != 1 || st.Failed != 1 || len(st.Failures) != 1 || !strings.Contains(st.Failures[0], "store down") {
		t.Errorf("stats %+v", st)
	}
	children.checkLanes(t, map[string][]string{"lib": {"1.0.0", "1.1.0", "1.2.0", "1.3.0"}})
	want := []string{"check-1 lib@1.0.0 published", "check-1 lib@1.1.0 failed", "check-1 lib@1.2.0 alreadyPublished", "check-1 lib@1.3.0 published"}
	if got := r.list(); !reflect.DeepEqual(got, want) {
		t.Errorf("replies %v, want %v", got, want)
	}
}

// Versions signalled while the lane works wait their turn behind the queue;
// one already waiting is not queued twice: a new check waiting for it joins,
// a check asking twice hears at once that it is in progress.
func TestPackageLaneQueuesSignalledVersions(t *testing.T) {
	env, _ := newEnv(t)
	children := &versionChildren{duration: func(contract.VersionRef) time.Duration { return 10 * time.Minute }}
	children.mock(env)
	var r replies
	r.mock(env)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.LaneVersionsSignal, laneVersions("check-2", "2.0.0", "1.1.0"))
	}, 5*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.LaneVersionsSignal, laneVersions("check-1", "1.1.0"))
		env.SignalWorkflow(contract.LaneVersionsSignal, laneVersions("", "3.0.0"))
	}, 6*time.Minute)
	var mid contract.LaneProgress
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(contract.ProgressQuery)
		if err == nil {
			err = v.Get(&mid)
		}
		if err != nil {
			t.Error(err)
		}
	}, 7*time.Minute)
	env.ExecuteWorkflow(publish.PackageLane, contract.LaneInput{Name: "lib", Queue: entries("check-1", "1.0.0", "1.1.0")})
	var st contract.LaneStats
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	children.checkLanes(t, map[string][]string{"lib": {"1.0.0", "1.1.0", "2.0.0", "3.0.0"}})
	if want := (contract.LaneProgress{Running: "1.0.0", Waiting: []string{"1.1.0", "2.0.0", "3.0.0"}}); !reflect.DeepEqual(mid, want) {
		t.Errorf("progress %+v, want %+v", mid, want)
	}
	want := []string{
		"check-1 lib@1.1.0 inProgress", // asked twice by check-1
		"check-1 lib@1.0.0 published",
		"check-1 lib@1.1.0 published", "check-2 lib@1.1.0 published",
		"check-2 lib@2.0.0 published",
	}
	// Signals to several checks are sent at once, and the test environment
	// runs their mocks concurrently: compare the replies, not their order
	// (the order of the versions themselves is checked above).
	got := r.list()
	slices.Sort(got)
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) || st.Published != 4 {
		t.Errorf("replies %v, want %v; stats %+v", got, want, st)
	}
}

// A lane continues as new between versions, carrying the versions still
// waiting (and who waits for them) and its counts.
func TestPackageLaneContinuesAsNew(t *testing.T) {
	env, _ := newEnv(t)
	children := &versionChildren{}
	children.mock(env)
	var r replies
	r.mock(env)
	env.SetCurrentHistoryLength(200)
	env.ExecuteWorkflow(publish.PackageLane, contract.LaneInput{Name: "lib", Queue: entries("check-1", "1.0.0", "1.1.0"),
		Stats: contract.LaneStats{Outcomes: contract.Outcomes{Published: 7}}, HistoryBudget: 100})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("lane ended with %v, want continue-as-new", err)
	}
	var next contract.LaneInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(next.Queue, entries("check-1", "1.0.0", "1.1.0")) || next.Stats.Published != 7 || next.Stats.ContinuedAsNew != 1 || next.HistoryBudget != 100 {
		t.Errorf("next input %+v", next)
	}
	if len(children.runs) != 0 {
		t.Errorf("versions ran before continue-as-new: %v", children.ids())
	}
}

// A skipped version is reported as skipped, with its reason, not failed.
func TestPackageLaneCountsSkippedVersions(t *testing.T) {
	env, _ := newEnv(t)
	children := &versionChildren{outcome: func(ref contract.VersionRef) (*contract.PublishOutput, error) {
		if strings.Contains(ref.Version, "alpha") {
			return &contract.PublishOutput{SkipReason: "the fileMap selects none of its files"}, nil
		}
		return &contract.PublishOutput{}, nil
	}}
	children.mock(env)
	var r replies
	r.mock(env)
	env.ExecuteWorkflow(publish.PackageLane, contract.LaneInput{Name: "lib", Queue: entries("check-1", "1.11.13", "2.0.0-alpha.1", "2.0.0-alpha.2")})
	var st contract.LaneStats
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if st.Published != 1 || st.Skipped != 2 || st.Failed != 0 || len(st.Skips) != 2 || !strings.Contains(st.Skips[0], "selects none") {
		t.Errorf("stats %+v", st)
	}
	want := []string{"check-1 lib@1.11.13 published", "check-1 lib@2.0.0-alpha.1 skipped", "check-1 lib@2.0.0-alpha.2 skipped"}
	if got := r.list(); !reflect.DeepEqual(got, want) {
		t.Errorf("replies %v, want %v", got, want)
	}
}
