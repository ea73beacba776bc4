package publish_test

import (
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// versionChildren mocks the PublishVersion children: each takes some workflow
// time, so children overlap, and ends as outcome says. Runs are recorded in
// workflow time, so overlaps are exact whatever goroutine runs them.
type versionChildren struct {
	mu       sync.Mutex
	inputs   map[string]contract.PublishInput // by workflow ID
	runs     []childRun
	outcome  func(ref contract.VersionRef) (*contract.PublishOutput, error)
	duration func(ref contract.VersionRef) time.Duration
}

type childRun struct {
	name, version string
	start, end    time.Time
}

func (v *versionChildren) mock(env *testsuite.TestWorkflowEnvironment) {
	v.inputs = map[string]contract.PublishInput{}
	env.OnWorkflow(publish.PublishVersion, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in contract.PublishInput) (*contract.PublishOutput, error) {
			v.mu.Lock()
			v.inputs[workflow.GetInfo(ctx).WorkflowExecution.ID] = in
			i := len(v.runs)
			v.runs = append(v.runs, childRun{name: in.Name, version: in.Version, start: workflow.Now(ctx)})
			v.mu.Unlock()
			d := time.Minute
			if v.duration != nil {
				d = v.duration(in.VersionRef)
			}
			err := workflow.Sleep(ctx, d)
			v.mu.Lock()
			v.runs[i].end = workflow.Now(ctx)
			v.mu.Unlock()
			if err != nil {
				return nil, err
			}
			if v.outcome != nil {
				return v.outcome(in.VersionRef)
			}
			return &contract.PublishOutput{}, nil
		})
}

func (v *versionChildren) ids() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var ids []string
	for id := range v.inputs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// maxParallel is the most children running at one instant.
func (v *versionChildren) maxParallel() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	type event struct {
		at    time.Time
		delta int
	}
	var events []event
	for _, r := range v.runs {
		events = append(events, event{r.start, +1}, event{r.end, -1})
	}
	sort.Slice(events, func(i, j int) bool {
		if !events[i].at.Equal(events[j].at) {
			return events[i].at.Before(events[j].at)
		}
		return events[i].delta < events[j].delta // an end frees its slot before a start takes it
	})
	n, most := 0, 0
	for _, e := range events {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// checkLanes asserts that each package's versions ran one after another, in
// the order the check listed them.
func (v *versionChildren) checkLanes(t *testing.T, order map[string][]string) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	byPkg := map[string][]childRun{}
	for _, r := range v.runs {
		byPkg[r.name] = append(byPkg[r.name], r)
	}
	for name, runs := range byPkg {
		sort.SliceStable(runs, func(i, j int) bool { return runs[i].start.Before(runs[j].start) })
		var versions []string
		for i, r := range runs {
			versions = append(versions, r.version)
			if i > 0 && r.start.Before(runs[i-1].end) {
				t.Errorf("%s@%s started at %v, before %s@%s ended at %v", name, r.version, r.start, name, runs[i-1].version, runs[i-1].end)
			}
		}
		if want, ok := order[name]; ok && !reflect.DeepEqual(versions, want) {
			t.Errorf("%s versions ran in order %v, want %v", name, versions, want)
		}
	}
}

func nv(versions ...string) []contract.NewVersion {
	var out []contract.NewVersion
	for _, v := range versions {
		out = append(out, contract.NewVersion{Version: v, Dist: &contract.Dist{Tarball: "https://registry.test/" + v + ".tgz"}})
	}
	return out
}

func updatesResult(t *testing.T, env *testsuite.TestWorkflowEnvironment) contract.UpdatesStats {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var st contract.UpdatesStats
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// checkedNames lists the batches CheckPackages was called with, in the
// order of the names they hold: a check runs several batches at once, so
// the order the calls arrive in is not fixed.
func checkedNames(f *fakes) [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]string
	for _, refs := range f.checked {
		var names []string
		for _, r := range refs {
			names = append(names, r.Name)
		}
		out = append(out, names)
	}
	slices.SortStableFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return out
}
