// Command publish publishes one package on a running stack: every new
// version (or just --version), and waits for the result, exiting non-zero if
// it fails.
//
//	go run ./starters/publish --package jquery
//	go run ./starters/publish --package jquery --version 3.7.1 --follow
//	go run ./starters/publish --package mylib --catalog ./my-catalog --json
//	go run ./starters/publish audit [--package NAME] [--sample P] [--repair] [--withdraw-broken] [--json]
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
	"sync"
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

// options are the starter's flags.
type options struct {
	name, version, catalogDir, edgeURL string
	follow, asJSON, detach             bool
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "audit" {
		auditMain(os.Args[2:])
		return
	}
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: publish --package NAME [--version V] [--catalog DIR] [--follow] [--json] [--detach]\n\n"+
			"Publishes a package's new versions (or one version) and waits for the result.\n"+
			"Exit codes: 0 published, 1 failed, 2 bad usage or invalid package, 3 Temporal unreachable.\n"+
			"To audit what is published: publish audit --help\n\n")
		fs.PrintDefaults()
	}
	var tc config.Temporal
	tc.RegisterFlags(fs)
	var o options
	fs.StringVar(&o.name, "package", "", "package name (required)")
	fs.StringVar(&o.version, "version", "", "publish exactly this version")
	fs.StringVar(&o.catalogDir, "catalog", "", "read the package file from this catalog and send it with the request")
	fs.BoolVar(&o.follow, "follow", false, "show live progress")
	fs.BoolVar(&o.asJSON, "json", false, "print the result as JSON")
	fs.BoolVar(&o.detach, "detach", false, "start and return without waiting")
	fs.StringVar(&o.edgeURL, "check-edge", config.Env("EDGE_URL", ""), "after publishing a --version, check that this edge serves it, e.g. http://127.0.0.1:8080 (env EDGE_URL); the request joins the run's trace")
	if err := fs.Parse(os.Args[1:]); err != nil {
		cli.Finish(cli.ExitUsage)
	}
	if o.name == "" {
		fs.Usage()
		cli.Exit(cli.ExitUsage, "publish: --package is required")
	}
	pkg, err := loadPackage(o)
	if err != nil {
		cli.Exit(cli.ExitUsage, "publish: %v", err)
	}
	target := o.name
	if o.version != "" {
		target += "@" + o.version
	}
	// Tracing first: the client takes the tracing interceptor when dialled.
	ctx := cli.Trace(context.Background(), "edgeflow-publish-starter", "publish "+target,
		attribute.String("package", o.name), attribute.String("version", o.version))
	c, err := tc.Dial(nil)
	if err != nil {
		cli.Exit(cli.ExitUnavailable, "publish: %v", err)
	}
	defer c.Close()

	opts, workflowType, input := request(o, pkg)
	run, err := c.ExecuteWorkflow(ctx, opts, workflowType, input)
	if err != nil {
		cli.Exit(cli.ExitUnavailable, "publish: start: %v", err)
	}
	if !o.asJSON {
		fmt.Fprintf(os.Stderr, "started %s\n  %s\n", run.GetID(), cli.WorkflowURL(tc.Namespace, run.GetID()))
	}
	if o.detach {
		if o.asJSON {
			cli.PrintJSON(map[string]string{"workflowId": run.GetID(), "runId": run.GetRunID()})
		}
		cli.Finish(cli.ExitOK)
	}
	cli.Finish(await(ctx, c, run, o))
}

// loadPackage reads the package file from --catalog, if given. It is found
// by its name field, as the workers' catalog is read; only errors stop it
// (catalog validate shows the warnings).
func loadPackage(o options) (*catalog.Package, error) {
	if o.catalogDir == "" {
		return nil, nil
	}
	p, err := catalog.Find(o.catalogDir, o.name)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// request is the run to start: one version's PublishVersion, or a check of
// the package that waits for the versions it hands to the package's lane.
// Either way a run already under that ID is followed, not duplicated.
func request(o options, pkg *catalog.Package) (client.StartWorkflowOptions, string, any) {
	if o.version != "" {
		ref := contract.VersionRef{PackageRef: contract.PackageRef{Name: o.name, Package: pkg}, Version: o.version}
		return client.StartWorkflowOptions{
			ID: contract.PublishVersionWorkflowID(o.name, o.version), TaskQueue: contract.TaskQueue, WorkflowIDReusePolicy: contract.PublishIDReusePolicy,
			WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			TypedSearchAttributes:    contract.VersionAttributes(o.name, o.version), StaticSummary: contract.PublishSummary(o.name, o.version),
		}, contract.WorkflowTypePublishVersion, contract.PublishInput{VersionRef: ref}
	}
	in := contract.UpdatesInput{Only: []string{o.name}, Wait: true}
	if pkg != nil {
		in.Packages = []catalog.Package{*pkg}
	}
	return client.StartWorkflowOptions{
		ID: contract.PackageUpdatesWorkflowID(o.name), TaskQueue: contract.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(contract.PackageKey.ValueSet(o.name)),
		StaticSummary:            "Publish new versions of " + o.name,
	}, contract.WorkflowTypePackageUpdates, in
}

// await waits for the run, prints its result and returns the exit code; a
// failed run exits at once.
func await(ctx context.Context, c client.Client, run client.WorkflowRun, o options) int {
	stopFollowing := func() {}
	if o.follow {
		stop := make(chan struct{})
		go followProgress(ctx, c, run, o.version != "", stop)
		var once sync.Once
		// The bar ends before the result is printed.
		stopFollowing = func() { once.Do(func() { close(stop) }) }
	}
	var result any
	code := cli.ExitOK
	var err error
	if o.version != "" {
		result, err = awaitVersion(ctx, run, o, stopFollowing)
	} else {
		result, code, err = awaitUpdates(ctx, run, o, stopFollowing)
	}
	stopFollowing()
	if err != nil {
		if o.asJSON {
			cli.PrintJSON(map[string]string{"workflowId": run.GetID(), "error": rootCause(err)})
		}
		cli.Exit(cli.ExitFailed, "publish: %s failed: %s", run.GetID(), rootCause(err))
	}
	if o.asJSON {
		cli.PrintJSON(result)
	}
	return code
}

func awaitVersion(ctx context.Context, run client.WorkflowRun, o options, stopFollowing func()) (contract.PublishOutput, error) {
	var out contract.PublishOutput
	if err := run.Get(ctx, &out); err != nil {
		return out, err
	}
	if !o.asJSON {
		stopFollowing()
		printVersion(o.name, o.version, out)
	}
	if o.edgeURL != "" && out.SkipReason == "" {
		if err := checkEdge(ctx, o.edgeURL, o.name, o.version); err != nil {
			cli.Exit(cli.ExitFailed, "publish: %v", err)
		}
		if !o.asJSON {
			fmt.Printf("the edge at %s serves %s@%s\n", o.edgeURL, o.name, o.version)
		}
	}
	return out, nil
}

func awaitUpdates(ctx context.Context, run client.WorkflowRun, o options, stopFollowing func()) (contract.UpdatesStats, int, error) {
	var out contract.UpdatesStats
	if err := run.Get(ctx, &out); err != nil {
		return out, cli.ExitOK, err
	}
	if !o.asJSON {
		stopFollowing()
		printUpdates(o.name, out)
	}
	return out, updatesExitCode(out), nil
}

// updatesExitCode fails a check when a version failed, or when the package
// had problems and no new version came of it.
func updatesExitCode(s contract.UpdatesStats) int {
	if s.Failed > 0 || (len(s.Problems) > 0 && s.NewVersions == 0) {
		return cli.ExitFailed
	}
	return cli.ExitOK
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
