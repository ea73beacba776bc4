package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// newAuditCommand is `publish audit`: it runs an AuditCatalog (of one
// package or of everything published), waits, and prints what was checked
// and found. Exit 0 when nothing is left broken, 1 otherwise.
func newAuditCommand(tc *config.Temporal) *cobra.Command {
	var in contract.AuditInput
	var name string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Audit published packages on the primary and the mirror, and repair them",
		Long: `Audits published packages on the primary and the mirror: every file's size and
SRI, its .br/.gz twins, the version and package documents, the search index.
With --repair, writes back the recorded bytes from a good copy.

Exit codes: 0 nothing left broken, 1 problems left (or a package's audit failed),
2 bad usage, 3 Temporal unreachable.`,
		Example: `  publish audit
  publish audit --package jquery --repair
  publish audit --sample 10 --json`,
		Args: cli.NoArgs,
		RunE: func(*cobra.Command, []string) error { return audit(*tc, in, name, asJSON) },
	}
	fs := cmd.Flags()
	fs.StringVar(&name, "package", "", "audit this package only (default: every published package)")
	fs.Float64Var(&in.SamplePercent, "sample", 100, "audit a random P% of files (0 < P <= 100)")
	fs.BoolVar(&in.Repair, "repair", false, "repair what is found from a good copy")
	fs.BoolVar(&in.WithdrawBroken, "withdraw-broken", false, "take versions left broken out of their package document")
	fs.BoolVar(&asJSON, "json", false, "print the result as one JSON document")
	return cmd
}

func audit(tc config.Temporal, in contract.AuditInput, name string, asJSON bool) error {
	if !(in.SamplePercent > 0 && in.SamplePercent <= 100) {
		return cli.Fail(cli.ExitUsage, "publish audit: --sample must be a percentage above 0 and at most 100, got %v", in.SamplePercent)
	}
	if name != "" {
		in.Only = []string{name}
	}
	c, err := tc.Dial(nil)
	if err != nil {
		return cli.Fail(cli.ExitUnavailable, "publish audit: %v", err)
	}
	defer c.Close()
	opts := client.StartWorkflowOptions{
		ID: contract.AuditCatalogWorkflowID(name), TaskQueue: contract.TaskQueue,
		// An audit already running under this ID is followed, not doubled.
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            contract.AuditSummary(name, in.SamplePercent, in.Repair),
	}
	if name != "" {
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(contract.PackageKey.ValueSet(name))
	}
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, opts, contract.WorkflowTypeAuditCatalog, in)
	if err != nil {
		return cli.Fail(cli.ExitUnavailable, "publish audit: start: %v", err)
	}
	if !asJSON {
		fmt.Fprintf(os.Stderr, "started %s\n  %s\n", run.GetID(), cli.WorkflowURL(tc.Namespace, run.GetID()))
	}
	var st contract.AuditStats
	if err := run.Get(ctx, &st); err != nil {
		if asJSON {
			cli.PrintJSON(map[string]string{"workflowId": run.GetID(), "error": rootCause(err)})
		}
		return cli.Fail(cli.ExitFailed, "publish audit: %s failed: %s", run.GetID(), rootCause(err))
	}
	if st.Problems == nil {
		st.Problems = []contract.AuditProblem{} // an empty array, never null
	}
	if asJSON {
		cli.PrintJSON(st)
	} else {
		printAudit(st)
	}
	if !st.Passed() {
		return cli.Code(cli.ExitFailed)
	}
	return nil
}

func printAudit(st contract.AuditStats) {
	fmt.Printf("audited %d of %d packages (%d versions): %d files checked on both stores, %d problems, %d repaired, %d left broken\n",
		st.Audited, st.Packages, st.Versions, st.Checked, st.ProblemCount(), st.Repaired, st.Unrepaired)
	for _, p := range st.Problems {
		what := p.Package
		if p.Version != "" {
			what += "@" + p.Version
		}
		if p.File != "" {
			what += " " + p.File
		}
		outcome := "repaired"
		if !p.Repaired {
			outcome = "NOT repaired: " + p.Reason
		}
		if p.Withdrawn {
			outcome += "; version withdrawn"
		}
		detail := ""
		if p.Detail != "" {
			detail = " (" + p.Detail + ")"
		}
		fmt.Printf("  %s on the %s: %s%s, %s\n", what, p.Store, p.Kind, detail, outcome)
	}
	if n := st.ProblemCount(); n > len(st.Problems) {
		fmt.Printf("  … and %d more (the first %d are listed)\n", n-len(st.Problems), len(st.Problems))
	}
	for _, w := range st.Withdrawn {
		fmt.Printf("  withdrawn: %s\n", w)
	}
	for _, f := range st.Failed {
		fmt.Printf("  audit failed: %s\n", f)
	}
}
