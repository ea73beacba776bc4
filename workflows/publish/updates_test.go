package publish_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// A check that waits (as the publish starter's does) hands every package's
// versions to its lane and counts how each ended.
func TestPackageUpdates(t *testing.T) {
	env, f := newEnv(t)
	f.catalog = []string{"gamma", "alpha", "beta", "delta", "eps", "zeta"}
	f.checks = map[string]contract.PackageCheck{
		"alpha": {Name: "alpha", NewVersions: nv("1.0.0", "1.1.0")},
		"beta":  {Name: "beta", Problem: "invalid package: no fileMap"},
		"gamma": {Name: "gamma", NewVersions: nv("2.0.0"), NotModified: true},
		"eps":   {Name: "eps", NewVersions: nv("3.0.0", "3.1.0", "3.2.0")},
		// Listed twice: the second run finds it published.
		"zeta": {Name: "zeta", NewVersions: nv("4.0.0", "4.0.0")},
	}
	runs := map[string]int{}
	children := &versionChildren{
		outcome: func(ref contract.VersionRef) (*contract.PublishOutput, error) {
			id := ref.Name + "@" + ref.Version
			if runs[id]++; runs[id] > 1 {
				// A run of a version that ended may start again (the ID is
				// reusable); it finds the version published.
				return &contract.PublishOutput{AlreadyPublished: true}, nil
			}
			switch id {
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

	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{Wait: true})
	st := updatesResult(t, env)

	want := contract.UpdatesStats{
		Packages: 6, Checked: 6, NotModified: 1, NewVersions: 8, Queued: 8,
		Outcomes: contract.Outcomes{Published: 5, AlreadyPublished: 2, InProgress: 0, Failed: 1},
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
	// Every package at once; a failure does not stop the package's later versions.
	if got := children.maxParallel(); got != 4 {
		t.Errorf("%d versions published at once, want one per package with new versions (4)", got)
	}
	children.checkLanes(t, map[string][]string{"alpha": {"1.0.0", "1.1.0"}, "eps": {"3.0.0", "3.1.0", "3.2.0"}})
}

// Packages publish in parallel; the versions of one package one after
// another, in the order the check listed them (oldest first), so each can
// reuse what the previous one stored.
func TestPackageUpdatesLanes(t *testing.T) {
	env, f := newEnv(t)
	f.checks = map[string]contract.PackageCheck{}
	var names []string
	order := map[string][]string{}
	const packages = 12
	for i := range packages {
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
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{Only: names, CheckBatch: 5, Wait: true})
	st := updatesResult(t, env)
	if st.Published != 3*packages || st.NewVersions != 3*packages || st.Queued != 3*packages {
		t.Errorf("stats %+v", st)
	}
	if got := children.maxParallel(); got != packages {
		t.Errorf("%d versions at once, want %d (one per package)", got, packages)
	}
	children.checkLanes(t, order)
}

// The scheduled check does not wait: it hands the versions over and ends
// while they publish. Each lane runs its package's versions in order.
func TestPackageUpdatesHandsOverAndMovesOn(t *testing.T) {
	env, f := newEnv(t)
	f.catalog = []string{"b", "a"}
	f.checks = map[string]contract.PackageCheck{"a": {Name: "a", NewVersions: nv("1.0.0", "1.1.0")}, "b": {Name: "b", NewVersions: nv("2.0.0")}}
	const checkID = "publish/demo@1.2.3" // newEnv's workflow ID
	var mu sync.Mutex
	var ran []string
	checkRunning := map[string]bool{} // by version: did the check still run half an hour into it?
	env.OnWorkflow(publish.PublishVersion, mock.Anything, mock.Anything).Return(func(ctx workflow.Context, in contract.PublishInput) (*contract.PublishOutput, error) {
		if err := workflow.Sleep(ctx, 30*time.Minute); err != nil { // publishing takes long
			return nil, err
		}
		// A signal to the check tells whether it still runs.
		err := workflow.SignalExternalWorkflow(ctx, checkID, "", "probe", nil).Get(ctx, nil)
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, in.Name+"@"+in.Version)
		checkRunning[in.Name+"@"+in.Version] = err == nil
		return &contract.PublishOutput{}, nil
	})
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{})
	st := updatesResult(t, env)
	if want := (contract.UpdatesStats{Packages: 2, Checked: 2, NewVersions: 3, Queued: 3}); !reflect.DeepEqual(st, want) {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	for v, running := range checkRunning {
		if running {
			t.Errorf("the check still ran half an hour into %s: it waited for its versions", v)
		}
	}
	// The lanes outlive the check: a's versions in order, b beside them.
	if i, j := slices.Index(ran, "a@1.0.0"), slices.Index(ran, "a@1.1.0"); len(ran) != 3 || i < 0 || j < i || !slices.Contains(ran, "b@2.0.0") {
		t.Errorf("versions ran %v; want a@1.0.0 before a@1.1.0, and b@2.0.0", ran)
	}
}

// A lane that is running gets the versions by signal; no second one starts.
func TestPackageUpdatesSignalsARunningLane(t *testing.T) {
	env, f := newEnv(t)
	f.checks = map[string]contract.PackageCheck{"run": {Name: "run", NewVersions: nv("1.0.0")}}
	var signalled []string
	f.laneSignal = func(id string, v contract.LaneVersions) error {
		signalled = append(signalled, id+" "+v.Versions[0].Version)
		return nil
	}
	started := 0
	env.OnWorkflow(publish.PackageLane, mock.Anything, mock.Anything).Return(func(ctx workflow.Context, in contract.LaneInput) (*contract.LaneStats, error) {
		started++
		return nil, nil
	}).Maybe()
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{Only: []string{"run"}})
	st := updatesResult(t, env)
	if want := []string{"publish-lane/run 1.0.0"}; !reflect.DeepEqual(signalled, want) || started != 0 || st.Queued != 1 {
		t.Errorf("signalled %v, started %d lanes, stats %+v; want %v and none started", signalled, started, st, want)
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
			tt.in.Wait = true
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
			in := children.inputs[contract.PublishVersionWorkflowID("b", "1.0.0")]
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
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{CheckBatch: 2, Wait: true})
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
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{Wait: true})
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
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{Only: []string{"a"}, Wait: true})
	updatesResult(t, env)
	want := contract.UpdatesStats{Packages: 1, Checked: 1, NewVersions: 2, Queued: 2, Outcomes: contract.Outcomes{Published: 1}}
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
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{CheckBatch: 1})
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
	if !reflect.DeepEqual(next.Names, []string{"a", "b", "c", "d", "e"}) || next.Cursor != 4 || next.CheckBatch != 1 {
		t.Errorf("next names %v cursor %d batch %d", next.Names, next.Cursor, next.CheckBatch)
	}
	// Four batches are checked at once; the run continues as new after them.
	wantStats := contract.UpdatesStats{Packages: 5, Checked: 4, NewVersions: 1, Queued: 1, Problems: []string{"b: gone"}}
	if !reflect.DeepEqual(next.Stats, wantStats) {
		t.Errorf("next stats %+v, want %+v", next.Stats, wantStats)
	}
	if got := checkedNames(f); !reflect.DeepEqual(got, [][]string{{"a"}, {"b"}, {"c"}, {"d"}}) {
		t.Errorf("checked %v", got)
	}

	// The next run picks up at the cursor and never lists the catalog again.
	env2, f2 := newEnv(t)
	f2.catalog = []string{"x"}
	f2.checks = map[string]contract.PackageCheck{"e": {Name: "e", NewVersions: nv("2.0.0")}}
	children2 := &versionChildren{}
	children2.mock(env2)
	env2.ExecuteWorkflow(publish.PackageUpdates, next)
	st := updatesResult(t, env2)
	if f2.listed != 0 {
		t.Error("the continued run listed the catalog")
	}
	if got := checkedNames(f2); !reflect.DeepEqual(got, [][]string{{"e"}}) {
		t.Errorf("continued run checked %v", got)
	}
	wantStats = contract.UpdatesStats{Packages: 5, Checked: 5, NewVersions: 2, Queued: 2, Problems: []string{"b: gone"}}
	if !reflect.DeepEqual(st, wantStats) {
		t.Errorf("final stats %+v, want %+v", st, wantStats)
	}
}

// A waiting check that continues as new counts the outcomes already
// delivered to it, and waits in the next run for the rest.
func TestPackageUpdatesWaitingContinuesAsNew(t *testing.T) {
	env, f := newEnv(t)
	f.checks = map[string]contract.PackageCheck{"a": {Name: "a", NewVersions: nv("1.0.0", "2.0.0")}}
	children := &versionChildren{duration: func(ref contract.VersionRef) time.Duration {
		if ref.Version == "1.0.0" {
			return time.Minute
		}
		return time.Hour
	}}
	children.mock(env)
	env.RegisterDelayedCallback(func() { env.SetCurrentHistoryLength(20000) }, 30*time.Second)
	env.ExecuteWorkflow(publish.PackageUpdates, contract.UpdatesInput{Only: []string{"a"}, Wait: true})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	var next contract.UpdatesInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Stats.Published != 1 || !reflect.DeepEqual(next.Awaiting, []string{"a@2.0.0"}) || !next.Wait {
		t.Errorf("next run: stats %+v awaiting %v wait %v; want 1.0.0 counted and 2.0.0 awaited", next.Stats, next.Awaiting, next.Wait)
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
	if o.WorkflowID != "publish/pkg@1.0.0" || o.TaskQueue != contract.TaskQueue {
		t.Errorf("options %+v", o)
	}
	if v, ok := o.TypedSearchAttributes.GetKeyword(contract.PackageKey); !ok || v != "pkg" {
		t.Errorf("Package attribute %q %v", v, ok)
	}
	if v, ok := o.TypedSearchAttributes.GetKeyword(contract.VersionKey); !ok || v != "1.0.0" {
		t.Errorf("Version attribute %q %v", v, ok)
	}
	if contract.ProcessBatchWorkflowID("pkg", "1.0.0", 12) != "publish/pkg@1.0.0/batch-12" {
		t.Errorf("ProcessBatchWorkflowID %q", contract.ProcessBatchWorkflowID("pkg", "1.0.0", 12))
	}
}
