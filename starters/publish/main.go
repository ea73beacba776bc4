// Command publish publishes one package on a running stack: every new
// version (or just --version), and waits for the result, exiting non-zero if
// it fails.
//
//	go run ./starters/publish --package jquery
//	go run ./starters/publish --package jquery --version 3.7.1 --follow
//	go run ./starters/publish --package mylib --catalog ./my-catalog --json
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/tracing"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func main() {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: publish --package NAME [--version V] [--catalog DIR] [--follow] [--json] [--detach]\n\n"+
			"Publishes a package's new versions (or one version) and waits for the result.\n"+
			"Exit codes: 0 published, 1 failed, 2 bad usage or invalid package, 3 Temporal unreachable.\n\n")
		fs.PrintDefaults()
	}
	var tc config.Temporal
	tc.RegisterFlags(fs)
	name := fs.String("package", "", "package name (required)")
	version := fs.String("version", "", "publish exactly this version")
	catalogDir := fs.String("catalog", "", "read the package file from this catalog and send it with the request")
	follow := fs.Bool("follow", false, "show live progress")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	detach := fs.Bool("detach", false, "start and return without waiting")
	edgeURL := fs.String("check-edge", config.Env("EDGE_URL", ""), "after publishing a --version, check that this edge serves it, e.g. http://127.0.0.1:8080 (env EDGE_URL); the request joins the run's trace")
	if err := fs.Parse(os.Args[1:]); err != nil {
		cli.Finish(cli.ExitUsage)
	}
	if *name == "" {
		fs.Usage()
		cli.Exit(cli.ExitUsage, "publish: --package is required")
	}
	var pkg *catalog.Package
	if *catalogDir != "" {
		// Found by its name field, as the workers' catalog is read; only
		// errors stop it (catalog validate shows the warnings).
		p, err := catalog.Find(*catalogDir, *name)
		if err != nil {
			cli.Exit(cli.ExitUsage, "publish: %v", err)
		}
		pkg = &p
	}
	target := *name
	if *version != "" {
		target += "@" + *version
	}
	// Tracing first: the client takes the tracing interceptor when dialled.
	ctx := cli.Trace(context.Background(), "edgeflow-publish-starter", "publish "+target,
		attribute.String("package", *name), attribute.String("version", *version))
	c, err := tc.Dial(nil)
	if err != nil {
		cli.Exit(cli.ExitUnavailable, "publish: %v", err)
	}
	defer c.Close()

	var run client.WorkflowRun
	if *version != "" {
		ref := contract.VersionRef{PackageRef: contract.PackageRef{Name: *name, Package: pkg}, Version: *version}
		run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: contract.PublishVersionWorkflowID(*name, *version), TaskQueue: contract.TaskQueue, WorkflowIDReusePolicy: contract.PublishIDReusePolicy,
			// A run already publishing this version is followed, not duplicated.
			WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			TypedSearchAttributes:    contract.VersionAttributes(*name, *version), StaticSummary: contract.PublishSummary(*name, *version),
		}, contract.WorkflowTypePublishVersion, contract.PublishInput{VersionRef: ref})
	} else {
		// Waits for the versions the check hands to the package's lane.
		in := contract.UpdatesInput{Only: []string{*name}, Wait: true}
		if pkg != nil {
			in.Packages = []catalog.Package{*pkg}
		}
		run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: contract.PackageUpdatesWorkflowID(*name), TaskQueue: contract.TaskQueue,
			WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			TypedSearchAttributes:    temporal.NewSearchAttributes(contract.PackageKey.ValueSet(*name)),
			StaticSummary:            "Publish new versions of " + *name,
		}, contract.WorkflowTypePackageUpdates, in)
	}
	if err != nil {
		cli.Exit(cli.ExitUnavailable, "publish: start: %v", err)
	}
	if !*asJSON {
		fmt.Fprintf(os.Stderr, "started %s\n  %s\n", run.GetID(), cli.WorkflowURL(tc.Namespace, run.GetID()))
	}
	if *detach {
		if *asJSON {
			cli.PrintJSON(map[string]string{"workflowId": run.GetID(), "runId": run.GetRunID()})
		}
		cli.Finish(cli.ExitOK)
	}
	stop := make(chan struct{})
	if *follow {
		go followProgress(ctx, c, run, *version != "", stop)
	}
	code := cli.ExitOK
	var result any
	if *version != "" {
		var out contract.PublishOutput
		err = run.Get(ctx, &out)
		result = out
		if err == nil && !*asJSON {
			close(stop)
			stop = nil
			printVersion(*name, *version, out)
		}
		if err == nil && *edgeURL != "" && out.SkipReason == "" {
			if cerr := checkEdge(ctx, *edgeURL, *name, *version); cerr != nil {
				cli.Exit(cli.ExitFailed, "publish: %v", cerr)
			} else if !*asJSON {
				fmt.Printf("the edge at %s serves %s@%s\n", *edgeURL, *name, *version)
			}
		}
	} else {
		var out contract.UpdatesStats
		err = run.Get(ctx, &out)
		result = out
		if err == nil && out.Failed > 0 {
			code = cli.ExitFailed
		}
		if err == nil && len(out.Problems) > 0 && out.NewVersions == 0 {
			code = cli.ExitFailed
		}
		if err == nil && !*asJSON {
			close(stop)
			stop = nil
			printUpdates(*name, out)
		}
	}
	if stop != nil {
		close(stop)
	}
	if err != nil {
		if *asJSON {
			cli.PrintJSON(map[string]string{"workflowId": run.GetID(), "error": rootCause(err)})
		}
		cli.Exit(cli.ExitFailed, "publish: %s failed: %s", run.GetID(), rootCause(err))
	}
	if *asJSON {
		cli.PrintJSON(result)
	}
	cli.Finish(code)
}

// checkEdge asks the edge for the version's API document, carrying the
// trace, so the edge's request joins the run's trace.
func checkEdge(ctx context.Context, edge, name, version string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u := strings.TrimRight(edge, "/") + "/libraries/" + url.PathEscape(name) + "/" + url.PathEscape(version)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tracing.Transport(nil)}).Do(req)
	if err != nil {
		return fmt.Errorf("check the edge: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the edge answers %s for %s", resp.Status, u)
	}
	return nil
}

func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

func followProgress(ctx context.Context, c client.Client, run client.WorkflowRun, single bool, stop chan struct{}) {
	bar := &cli.Progress{Out: os.Stderr, Label: run.GetID(), Unit: "files"}
	if !single {
		bar.Unit = "versions"
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			bar.Done()
			return
		case <-t.C:
		}
		v, err := c.QueryWorkflow(ctx, run.GetID(), "", contract.ProgressQuery)
		if err != nil {
			continue
		}
		if single {
			var p contract.PublishProgress
			if v.Get(&p) == nil {
				bar.Update(p.FilesDone, p.Files, fmt.Sprintf("%s, %d/%d batches, %d reused", p.Stage, p.BatchesDone, p.Batches, p.Reused))
			}
		} else {
			var s contract.UpdatesStats
			if v.Get(&s) == nil {
				bar.Update(s.Published+s.AlreadyPublished+s.InProgress+s.Skipped+s.Failed, s.NewVersions,
					fmt.Sprintf("%d/%d packages checked", s.Checked, s.Packages))
			}
		}
	}
}

func printVersion(name, version string, out contract.PublishOutput) {
	if out.AlreadyPublished {
		fmt.Printf("%s@%s was already published: nothing to do\n", name, version)
		return
	}
	if out.SkipReason != "" {
		fmt.Printf("%s@%s skipped: %s\n", name, version, out.SkipReason)
		return
	}
	r := out.Result
	fmt.Printf("published %s@%s: %d files (%d bytes), %d of %d source files reused (%.0f%%), latest is %s\n",
		name, version, r.Files, r.Bytes, r.Reused, r.SourceFiles, 100*r.ReuseRate, r.Latest)
	if out.Processing.MinifyFailed > 0 {
		fmt.Printf("  %d files could not be minified and were published as they are:\n", out.Processing.MinifyFailed)
		for _, w := range out.Processing.Warnings {
			fmt.Printf("    %s\n", w)
		}
	}
}

func printUpdates(name string, s contract.UpdatesStats) {
	fmt.Printf("%s: %d new versions, %d published, %d already published, %d in progress elsewhere, %d skipped, %d failed\n",
		name, s.NewVersions, s.Published, s.AlreadyPublished, s.InProgress, s.Skipped, s.Failed)
	for _, r := range s.Skips {
		fmt.Printf("  skipped: %s\n", r)
	}
	for _, p := range s.Problems {
		fmt.Printf("  problem: %s\n", p)
	}
	for _, f := range s.Failures {
		fmt.Printf("  failed: %s\n", f)
	}
}
