package publish

import (
	"fmt"
	"sort"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// auditParallel is how many packages an audit checks at once by default:
// each is an activity on the compress pool, which bounds its CPU itself.
const auditParallel = 8

// AuditCatalog audits every published package (or in.Only) on both stores:
// one AuditPackage activity per package on the compress pool, a few at
// once, each returning only counts and the first problems, so no file list
// enters history. It continues as new before its history grows large,
// carrying its cursor, so a long audit is bounded and resumes where it was.
func AuditCatalog(ctx workflow.Context, in contract.AuditInput) (*contract.AuditStats, error) {
	st := &in.Stats
	if err := workflow.SetQueryHandler(ctx, contract.ProgressQuery, func() (contract.AuditStats, error) { return *st, nil }); err != nil {
		return nil, err
	}
	if in.Seed == "" {
		// The first run's ID: random across runs (the Schedule's daily
		// sample differs each day), the same across continue-as-new.
		in.Seed = workflow.GetInfo(ctx).WorkflowExecution.RunID
	}
	budget := in.HistoryBudget
	if budget <= 0 {
		budget = historyBudget
	}
	if in.Names == nil {
		if len(in.Only) > 0 {
			in.Names = append([]string{}, in.Only...)
		} else {
			names, err := listPublished(publishOptions(ctx))
			if err != nil {
				return nil, fmt.Errorf("list published packages: %w", err)
			}
			in.Names = append([]string{}, names...)
		}
		sort.Strings(in.Names)
		st.Packages = len(in.Names)
	}
	parallel := in.Parallel
	if parallel <= 0 {
		parallel = auditParallel
	}
	for in.Cursor < len(in.Names) {
		end := min(in.Cursor+parallel, len(in.Names))
		futures := make([]workflow.Future, 0, end-in.Cursor)
		inputs := make([]contract.AuditPackageInput, 0, end-in.Cursor)
		for _, name := range in.Names[in.Cursor:end] {
			pin := contract.AuditPackageInput{Name: name, SamplePercent: in.SamplePercent,
				Seed: in.Seed, Repair: in.Repair, WithdrawBroken: in.WithdrawBroken}
			inputs = append(inputs, pin)
			futures = append(futures, auditPackage(ctx, pin))
		}
		workflow.SetCurrentDetails(ctx, auditDetails("auditing", in.Cursor+1, end, st))
		for i, f := range futures {
			var r contract.AuditReport
			if err := f.Get(ctx, &r); err != nil {
				st.Fail(in.Names[in.Cursor+i], err.Error())
				continue
			}
			if in.Repair && len(r.NeedOriginals) > 0 {
				r = auditWithOriginals(ctx, inputs[i], r)
			}
			st.Add(r)
		}
		in.Cursor = end
		info := workflow.GetInfo(ctx)
		if in.Cursor < len(in.Names) && (info.GetCurrentHistoryLength() > budget || info.GetContinueAsNewSuggested()) {
			st.ContinuedAsNew++
			return nil, workflow.NewContinueAsNewError(ctx, AuditCatalog, in)
		}
	}
	workflow.SetCurrentDetails(ctx, auditDetails("audited", 1, len(in.Names), st))
	return st, nil
}

// auditWithOriginals fetches from the registry the releases a package's
// audit needed and no store kept, then audits the package again, which
// repairs from them. The result counts what the first audit repaired and
// what the second found; a fetch that fails leaves the first report.
func auditWithOriginals(ctx workflow.Context, in contract.AuditPackageInput, r contract.AuditReport) contract.AuditReport {
	fetched := 0
	for _, v := range r.NeedOriginals[:min(len(r.NeedOriginals), contract.MaxOriginalFetches)] {
		err := workflow.ExecuteActivity(publishOptions(ctx), contract.FetchOriginalActivity, contract.OriginalRef{Name: in.Name, Version: v}).Get(ctx, nil)
		if err != nil {
			workflow.GetLogger(ctx).Warn("fetching an original failed", "package", in.Name, "version", v, "error", err)
			continue
		}
		fetched++
	}
	if fetched == 0 {
		return r
	}
	var again contract.AuditReport
	if err := auditPackage(ctx, in).Get(ctx, &again); err != nil {
		return r
	}
	out := again
	out.Checked = r.Checked
	out.Problems = nil
	for _, p := range r.Problems {
		if p.Repaired {
			out.Problems = append(out.Problems, p)
			if out.ByKind == nil {
				out.ByKind = map[string]int{}
			}
			out.ByKind[p.Kind]++
		}
	}
	out.Problems = append(out.Problems, again.Problems...)
	out.Repaired += r.Repaired
	return out
}

func auditDetails(verb string, from, to int, st *contract.AuditStats) string {
	return fmt.Sprintf("%s packages %d–%d of %d: %d files checked, %d problems, %d repaired, %d left broken, %d packages failed",
		verb, from, to, st.Packages, st.Checked, st.ProblemCount(), st.Repaired, st.Unrepaired, st.FailedCount)
}

func listPublished(ctx workflow.Context) (names []string, err error) {
	err = workflow.ExecuteActivity(ctx, contract.ListPublishedActivity).Get(ctx, &names)
	return names, err
}

// auditPackage runs on the compress queue: it hashes and decodes every
// sampled file of the package. It is started, not awaited.
func auditPackage(ctx workflow.Context, in contract.AuditPackageInput) workflow.Future {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: contract.CompressTaskQueue,
		// A package of 100,000 files is read twice over (both stores).
		StartToCloseTimeout: 2 * time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5,
		},
	})
	return workflow.ExecuteActivity(ctx, contract.AuditPackageActivity, in)
}
