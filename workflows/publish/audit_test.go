package publish_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// An audit lists what is published, audits every package once on the
// compress pool, continues as new with its cursor and seed when its history
// is over budget, and counts a package whose audit failed as not passed.
func TestAuditCatalogResumesAndCounts(t *testing.T) {
	var audited []contract.AuditPackageInput
	listed := 0
	in := contract.AuditInput{SamplePercent: 5, Repair: true, Parallel: 2, HistoryBudget: 1}
	var st *contract.AuditStats
	for runs := 1; ; runs++ {
		if runs > 10 {
			t.Fatal("the audit never ends")
		}
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.SetTestTimeout(30 * time.Second)
		publish.Register(env)
		publishacts.RegisterPublish(env, acts)
		publishacts.RegisterCompress(env, compress)
		env.OnActivity(acts.ListPublished, anyNoArgs...).Return(func(context.Context) ([]string, error) {
			listed++
			return []string{"e", "a", "d", "c", "b"}, nil
		})
		env.OnActivity(compress.AuditPackage, anyInput...).Return(func(_ context.Context, in contract.AuditPackageInput) (*contract.AuditReport, error) {
			audited = append(audited, in)
			switch in.Name {
			case "b":
				return &contract.AuditReport{Package: "b", Versions: 2, Checked: 10, Repaired: 1, ByKind: map[string]int{"missing": 1},
					Problems: []contract.AuditProblem{{Package: "b", Version: "1.0.0", File: "b.js", Store: "mirror", Kind: "missing", Repaired: true}}}, nil
			case "d":
				return nil, temporal.NewNonRetryableApplicationError("store unreachable", "Unreachable", nil)
			}
			return &contract.AuditReport{Package: in.Name, Versions: 1, Checked: 3}, nil
		})
		env.SetCurrentHistoryLength(2)
		env.ExecuteWorkflow(publish.AuditCatalog, in)
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			var next contract.AuditInput
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
				t.Fatal(err)
			}
			if next.Seed == "" || (in.Seed != "" && next.Seed != in.Seed) {
				t.Fatalf("run %d: seed %q, was %q", runs, next.Seed, in.Seed)
			}
			in = next
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := env.GetWorkflowResult(&st); err != nil {
			t.Fatal(err)
		}
		break
	}
	if listed != 1 {
		t.Errorf("listed %d times, want once", listed)
	}
	var names []string
	for _, a := range audited {
		names = append(names, a.Name)
		if a.Seed != in.Seed || a.SamplePercent != 5 || !a.Repair || a.WithdrawBroken {
			t.Errorf("%s audited with %+v", a.Name, a)
		}
	}
	// The workflow schedules packages in name order, but the test
	// environment runs the activities of one batch concurrently: the order
	// the mock sees them in is not the workflow's to decide.
	slices.Sort(names)
	if !reflect.DeepEqual(names, []string{"a", "b", "c", "d", "e"}) {
		t.Errorf("audited %v, want each package once", names)
	}
	if st.Packages != 5 || st.Audited != 4 || st.Checked != 19 || st.Repaired != 1 || st.FailedCount != 1 ||
		st.ByKind["missing"] != 1 || len(st.Problems) != 1 || st.ContinuedAsNew != 2 || st.Passed() {
		t.Errorf("stats %+v", st)
	}
}

// A package whose files only their original release could repair, and
// none is kept: the audit fetches it from the registry and audits again.
func TestAuditCatalogFetchesMissingOriginals(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	publish.Register(env)
	publishacts.RegisterPublish(env, acts)
	publishacts.RegisterCompress(env, compress)
	var fetched []contract.OriginalRef
	audits := 0
	env.OnActivity(acts.FetchOriginal, anyInput...).Return(func(_ context.Context, in contract.OriginalRef) error {
		fetched = append(fetched, in)
		return nil
	})
	env.OnActivity(compress.AuditPackage, anyInput...).Return(func(_ context.Context, in contract.AuditPackageInput) (*contract.AuditReport, error) {
		audits++
		if len(fetched) == 0 {
			return &contract.AuditReport{Package: "x", Versions: 1, Checked: 4, Repaired: 1, Unrepaired: 2, NeedOriginals: []string{"1.0.0"},
				ByKind: map[string]int{"missing": 3}, Problems: []contract.AuditProblem{
					{Package: "x", Version: "1.0.0", File: "a.js", Store: "mirror", Kind: "missing", Repaired: true},
					{Package: "x", Version: "1.0.0", File: "b.js", Store: "primary", Kind: "missing"},
					{Package: "x", Version: "1.0.0", File: "b.js", Store: "mirror", Kind: "missing"}}}, nil
		}
		return &contract.AuditReport{Package: "x", Versions: 1, Checked: 4, Repaired: 2, ByKind: map[string]int{"missing": 2}, Problems: []contract.AuditProblem{
			{Package: "x", Version: "1.0.0", File: "b.js", Store: "primary", Kind: "missing", Repaired: true},
			{Package: "x", Version: "1.0.0", File: "b.js", Store: "mirror", Kind: "missing", Repaired: true}}}, nil
	})
	env.ExecuteWorkflow(publish.AuditCatalog, contract.AuditInput{Only: []string{"x"}, Repair: true})
	var st contract.AuditStats
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if len(fetched) != 1 || fetched[0] != (contract.OriginalRef{Name: "x", Version: "1.0.0"}) || audits != 2 {
		t.Fatalf("fetched %v, %d audits", fetched, audits)
	}
	if st.Repaired != 3 || st.Unrepaired != 0 || st.Checked != 4 || len(st.Problems) != 3 || st.ByKind["missing"] != 3 || !st.Passed() {
		t.Errorf("stats %+v", st)
	}
}
