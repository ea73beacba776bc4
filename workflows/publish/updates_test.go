package publish_test

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
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
	return out
}

func TestPackageUpdates(t *testing.T) {
	env, f := newEnv(t)
	f.catalog = []string{"gamma", "alpha", "beta", "delta", "eps", "zeta"}
	f.checks = map[string]contract.PackageCheck{
		"alpha": {Name: "alpha", NewVersions: nv("1.0.0", "1.1.0")},
		"beta":  {Name: "beta", Problem: "invalid package: no fileMap"},
		"gamma": {Name: "gamma", NewVersions: nv("2.0.0"), NotModified: true},
		"eps":   {Name: "eps", NewVersions: nv("3.0.0", "3.1.0", "3.2.0")},
		// Listed twice: the second start finds the first run (running or
		// published) under the same workflow ID, as a version another check
		// already started would be.
		"zeta": {Name: "zeta", NewVersions: nv("4.0.0", "4.0.0")},
	}
	children := &versionChildren{
		outcome: func(ref contract.VersionRef) (*contract.PublishOutput, error) {
			switch ref.Name + "@" + ref.Version {
			case "alpha@1.1.0":
				return &contract.PublishOutput{AlreadyPublished: true}, nil
			case "eps@3.1.0":
				return nil, errors.New("eps@3.1.0: batch 0: brotli failed")
			}
			return &contract.PublishOutput{Result: &contract.CommitResult{Files: 1}}, nil
		},
		// Uneven, so the order children finish in differs from the order they start in.
		duration: func(ref contract.VersionRef) time.Duration {
			return time.Duration(1+len(ref.Name)%3) * time.Minute
		},
	}
	children.mock(env)

	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{MaxParallelVersions: 2})
	st := updatesResult(t, env)

	want := contract.UpdatesStats{
		Packages: 6, Checked: 6, NotModified: 1, NewVersions: 8,
		Published: 5, AlreadyPublished: 1, InProgress: 1, Failed: 1,
		Problems: []string{"beta: invalid package: no fileMap"},
	}
	failures := st.Failures
	st.Failures = nil
	if !reflect.DeepEqual(st, want) {
		t.Errorf("stats\n got %+v\nwant %+v", st, want)
	}
	if len(failures) != 1 || !strings.Contains(failures[0], "brotli failed") {
		t.Errorf("failures %q, want the eps@3.1.0 error", failures)
	}
	if f.listed != 1 {
		t.Errorf("ListCatalog called %d times", f.listed)
	}
	if got := checkedNames(f); !reflect.DeepEqual(got, [][]string{{"alpha", "beta", "delta", "eps", "gamma", "zeta"}}) {
		t.Errorf("checked %v, want one sorted batch", got)
	}
	wantIDs := []string{"publish/alpha@1.0.0", "publish/alpha@1.1.0", "publish/eps@3.0.0", "publish/eps@3.1.0", "publish/eps@3.2.0", "publish/gamma@2.0.0", "publish/zeta@4.0.0"}
	if got := children.ids(); !reflect.DeepEqual(got, wantIDs) {
		t.Errorf("children %v, want %v", got, wantIDs)
	}
	in := children.inputs["publish/eps@3.1.0"]
	if in.Name != "eps" || in.Version != "3.1.0" || in.Dist == nil || in.Dist.Tarball != "https://registry.test/3.1.0.tgz" || in.Package != nil {
		t.Errorf("child input %+v", in)
	}
	if got := children.maxParallel(); got != 2 {
		t.Errorf("%d versions published at once, want at most (and at some point exactly) 2", got)
	}
	// A failure does not stop the package's later versions.
	children.checkLanes(t, map[string][]string{"alpha": {"1.0.0", "1.1.0"}, "eps": {"3.0.0", "3.1.0", "3.2.0"}})
}

// Packages publish in parallel, 8 at once by default; the versions of one
// package one after another, oldest (first listed) first, so each can reuse
// what the previous one stored.
func TestPackageUpdatesLanes(t *testing.T) {
	tests := []struct {
		name     string
		max      int
		packages int
		want     int
	}{
		{"default bound", 0, 12, 8},
		{"fewer packages than the bound", 5, 3, 3},
		{"one at a time", 1, 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, f := newEnv(t)
			f.checks = map[string]contract.PackageCheck{}
			var names []string
			order := map[string][]string{}
			for i := 0; i < tt.packages; i++ {
				n := fmt.Sprintf("pkg%02d", i)
				names = append(names, n)
				versions := []string{"1.0.0", "1.0.1", "0.9.0"} // the check's order, not semver order
				f.checks[n] = contract.PackageCheck{Name: n, NewVersions: nv(versions...)}
				order[n] = versions
			}
			children := &versionChildren{duration: func(ref contract.VersionRef) time.Duration {
				return time.Duration(1+len(ref.Version)+int(ref.Name[len(ref.Name)-1])%4) * time.Minute
			}}
			children.mock(env)
			env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{Only: names, MaxParallelVersions: tt.max})
			st := updatesResult(t, env)
			if st.Published != 3*tt.packages || st.NewVersions != 3*tt.packages {
				t.Errorf("stats %+v", st)
			}
			if got := children.maxParallel(); got != tt.want {
				t.Errorf("%d versions at once, want %d", got, tt.want)
			}
			children.checkLanes(t, order)
		})
	}
}

func TestPackageUpdatesOnlyAndPackages(t *testing.T) {
	pkgB := catalog.Package{Name: "b", Description: "sent by the starter", Autoupdate: catalog.Autoupdate{Source: "npm", Target: "b"}}
	pkgA := catalog.Package{Name: "a", Autoupdate: catalog.Autoupdate{Source: "git", Target: "owner/a"}}
	tests := []struct {
		name     string
		in       contract.UpdatesInput
		checked  []string
		packages map[string]*catalog.Package // the Package each check ref carries
	}{
		{"only", contract.UpdatesInput{Only: []string{"b", "a"}}, []string{"a", "b"},
			map[string]*catalog.Package{"a": nil, "b": nil}},
		{"packages", contract.UpdatesInput{Packages: []catalog.Package{pkgB, pkgA}}, []string{"a", "b"},
			map[string]*catalog.Package{"a": &pkgA, "b": &pkgB}},
		{"only some of the packages sent", contract.UpdatesInput{Only: []string{"b", "c"}, Packages: []catalog.Package{pkgB, pkgA}}, []string{"b", "c"},
			map[string]*catalog.Package{"b": &pkgB, "c": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, f := newEnv(t)
			f.catalog = []string{"should", "not", "be", "read"}
			f.checks = map[string]contract.PackageCheck{"b": {Name: "b", NewVersions: nv("1.0.0")}}
			children := &versionChildren{}
			children.mock(env)
			env.ExecuteWorkflow(publish.PackageUpdates, tt.in)
			st := updatesResult(t, env)
			if f.listed != 0 {
				t.Error("ListCatalog called")
			}
			if got := checkedNames(f); !reflect.DeepEqual(got, [][]string{tt.checked}) {
				t.Errorf("checked %v, want %v", got, tt.checked)
			}
			for _, ref := range f.checked[0] {
				want := tt.packages[ref.Name]
				if (ref.Package == nil) != (want == nil) || (want != nil && !reflect.DeepEqual(*ref.Package, *want)) {
					t.Errorf("ref %s carries %+v, want %+v", ref.Name, ref.Package, want)
				}
			}
			if st.Packages != len(tt.checked) || st.Published != 1 {
				t.Errorf("stats %+v", st)
			}
			in := children.inputs[contract.PublishID("b", "1.0.0")]
			if want := tt.packages["b"]; (in.Package == nil) != (want == nil) || (want != nil && !reflect.DeepEqual(*in.Package, *want)) {
				t.Errorf("child got package %+v, want %+v", in.Package, want)
			}
		})
	}
}

func TestPackageUpdatesCheckBatches(t *testing.T) {
	env, f := newEnv(t)
	f.catalog = []string{"e", "d", "c", "b", "a"}
	f.checks = map[string]contract.PackageCheck{"a": {Name: "a", NewVersions: nv("1.0.0")}, "e": {Name: "e", NewVersions: nv("1.0.0")}}
	children := &versionChildren{}
	children.mock(env)
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{CheckBatch: 2})
	st := updatesResult(t, env)
	if got := checkedNames(f); !reflect.DeepEqual(got, [][]string{{"a", "b"}, {"c", "d"}, {"e"}}) {
		t.Errorf("checked %v", got)
	}
	if st.Checked != 5 || st.Published != 2 || st.Packages != 5 {
		t.Errorf("stats %+v", st)
	}
}

func TestPackageUpdatesEmptyCatalog(t *testing.T) {
	env, f := newEnv(t)
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{})
	st := updatesResult(t, env)
	if !reflect.DeepEqual(st, contract.UpdatesStats{}) || len(f.checked) != 0 || f.listed != 1 {
		t.Errorf("stats %+v, checks %v", st, f.checked)
	}
}

func TestPackageUpdatesCheckFails(t *testing.T) {
	env, f := newEnv(t)
	f.catalog = []string{"a"}
	f.checkErr = errors.New("registry unreachable")
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{})
	err := env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), "check packages") || !strings.Contains(err.Error(), "registry unreachable") {
		t.Fatalf("error %v", err)
	}
}

func TestPackageUpdatesProgressQuery(t *testing.T) {
	env, f := newEnv(t)
	f.checks = map[string]contract.PackageCheck{"a": {Name: "a", NewVersions: nv("1.0.0", "2.0.0")}}
	children := &versionChildren{duration: func(ref contract.VersionRef) time.Duration {
		if ref.Version == "1.0.0" {
			return time.Minute
		}
		return time.Hour
	}}
	children.mock(env)
	var mid contract.UpdatesStats
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(contract.ProgressQuery)
		if err != nil {
			t.Error(err)
			return
		}
		if err := v.Get(&mid); err != nil {
			t.Error(err)
		}
	}, 30*time.Minute)
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{Only: []string{"a"}})
	updatesResult(t, env)
	want := contract.UpdatesStats{Packages: 1, Checked: 1, NewVersions: 2, Published: 1}
	if !reflect.DeepEqual(mid, want) {
		t.Errorf("progress %+v, want %+v", mid, want)
	}
}

func TestPackageUpdatesContinuesAsNew(t *testing.T) {
	env, f := newEnv(t)
	f.catalog = []string{"c", "b", "a", "d", "e"}
	f.checks = map[string]contract.PackageCheck{"a": {Name: "a", NewVersions: nv("1.0.0")}, "b": {Name: "b", Problem: "gone"}}
	children := &versionChildren{}
	children.mock(env)
	env.SetCurrentHistoryLength(20000) // over the built-in budget
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{CheckBatch: 2, MaxParallelVersions: 3})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	if can.WorkflowType.Name != "PackageUpdates" {
		t.Errorf("continues as %s", can.WorkflowType.Name)
	}
	var next contract.UpdatesInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(next.Names, []string{"a", "b", "c", "d", "e"}) || next.Cursor != 2 {
		t.Errorf("next names %v cursor %d", next.Names, next.Cursor)
	}
	if next.CheckBatch != 2 || next.MaxParallelVersions != 3 {
		t.Errorf("next settings %+v", next)
	}
	wantStats := contract.UpdatesStats{Packages: 5, Checked: 2, NewVersions: 1, Published: 1, Problems: []string{"b: gone"}}
	if !reflect.DeepEqual(next.Stats, wantStats) {
		t.Errorf("next stats %+v, want %+v", next.Stats, wantStats)
	}
	if got := checkedNames(f); !reflect.DeepEqual(got, [][]string{{"a", "b"}}) {
		t.Errorf("checked %v", got)
	}

	// The next run picks up at the cursor and never lists the catalog again.
	env2, f2 := newEnv(t)
	f2.catalog = []string{"x"}
	f2.checks = map[string]contract.PackageCheck{"d": {Name: "d", NewVersions: nv("2.0.0")}}
	children2 := &versionChildren{}
	children2.mock(env2)
	env2.ExecuteWorkflow(publish.PackageUpdates, next)
	st := updatesResult(t, env2)
	if f2.listed != 0 {
		t.Error("the continued run listed the catalog")
	}
	if got := checkedNames(f2); !reflect.DeepEqual(got, [][]string{{"c", "d"}, {"e"}}) {
		t.Errorf("continued run checked %v", got)
	}
	wantStats = contract.UpdatesStats{Packages: 5, Checked: 5, NewVersions: 2, Published: 2, Problems: []string{"b: gone"}}
	if !reflect.DeepEqual(st, wantStats) {
		t.Errorf("final stats %+v, want %+v", st, wantStats)
	}
}

func TestPackageUpdatesCapsListedProblems(t *testing.T) {
	env, f := newEnv(t)
	f.checks = map[string]contract.PackageCheck{}
	var names []string
	for i := 0; i < 30; i++ {
		n := fmt.Sprintf("p%02d", i)
		names = append(names, n)
		f.checks[n] = contract.PackageCheck{Name: n, Problem: "broken"}
	}
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{Only: names})
	st := updatesResult(t, env)
	if st.Checked != 30 || len(st.Problems) != 20 || st.Problems[0] != "p00: broken" {
		t.Errorf("checked %d, problems %d %v", st.Checked, len(st.Problems), st.Problems)
	}
}

func TestPublishChildOptions(t *testing.T) {
	o := publish.PublishChildOptions("pkg", "1.0.0")
	if o.WorkflowID != "publish/pkg@1.0.0" || o.TaskQueue != contract.PublishQueue {
		t.Errorf("options %+v", o)
	}
	if v, ok := o.TypedSearchAttributes.GetKeyword(contract.PackageKey); !ok || v != "pkg" {
		t.Errorf("Package attribute %q %v", v, ok)
	}
	if v, ok := o.TypedSearchAttributes.GetKeyword(contract.VersionKey); !ok || v != "1.0.0" {
		t.Errorf("Version attribute %q %v", v, ok)
	}
	if contract.BatchID("pkg", "1.0.0", 12) != "publish/pkg@1.0.0/batch-12" {
		t.Errorf("BatchID %q", contract.BatchID("pkg", "1.0.0", 12))
	}
}
