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
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/attribute"

	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/internal/tracing"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// options are the starter's flags.
type options struct {
	name, version, catalogDir, edgeURL string
	follow, asJSON, detach             bool
}

func main() { cli.Execute(newRootCommand()) }

func newRootCommand() *cobra.Command {
	var tc config.Temporal
	var o options
	root := &cobra.Command{
		Use:   "publish --package NAME [--version V]",
		Short: "Publish a package's new versions (or one version) and wait for the result",
		Long: `Publishes a package's new versions (or exactly --version) on a running stack and
waits for the result. The starter's own version: publish version.

Exit codes: 0 published, 1 failed, 2 bad usage or invalid package, 3 Temporal unreachable.`,
		Example: `  publish --package jquery
  publish --package jquery --version 3.7.1 --follow
  publish --package mylib --catalog ./my-catalog --json
  publish audit --package jquery --repair`,
		Args: cli.NoArgs,
		RunE: func(*cobra.Command, []string) error { return publishPackage(tc, o) },
	}
	tc.RegisterFlags(root.PersistentFlags())
	fs := root.Flags()
	fs.StringVar(&o.name, "package", "", "package name (required)")
	fs.StringVar(&o.version, "version", "", "publish exactly this version")
	fs.StringVar(&o.catalogDir, "catalog", "", "read the package file from this catalog and send it with the request")
	fs.BoolVar(&o.follow, "follow", false, "show live progress")
	fs.BoolVar(&o.asJSON, "json", false, "print the result as JSON")
	fs.BoolVar(&o.detach, "detach", false, "start and return without waiting")
	fs.StringVar(&o.edgeURL, "check-edge", config.Env("EDGE_URL", ""), "after publishing a --version, check that this edge serves it, e.g. http://127.0.0.1:8080 (env EDGE_URL); the request joins the run's trace")
	root.AddCommand(newAuditCommand(&tc))
	return root
}

func publishPackage(tc config.Temporal, o options) error {
	if o.name == "" {
		return cli.Fail(cli.ExitUsage, "publish: --package is required (see publish --help)")
	}
	pkg, err := loadPackage(o)
	if err != nil {
		return cli.Fail(cli.ExitUsage, "publish: %v", err)
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
		return cli.Fail(cli.ExitUnavailable, "publish: %v", err)
	}
	defer c.Close()

	opts, workflowType, input := request(o, pkg)
	run, err := c.ExecuteWorkflow(ctx, opts, workflowType, input)
	if err != nil {
		return cli.Fail(cli.ExitUnavailable, "publish: start: %v", err)
	}
	if !o.asJSON {
		fmt.Fprintf(os.Stderr, "started %s\n  %s\n", run.GetID(), cli.WorkflowURL(tc.Namespace, run.GetID()))
	}
	if o.detach {
		if o.asJSON {
			cli.PrintJSON(map[string]string{"workflowId": run.GetID(), "runId": run.GetRunID()})
		}
		return nil
	}
	return await(ctx, c, run, o)
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

// request is the run to start (pubclient's, the console's API starts the same).
func request(o options, pkg *catalog.Package) (client.StartWorkflowOptions, string, any) {
	return pubclient.Request(o.name, o.version, pkg)
}

// await waits for the run, prints its result and returns the error that
// ends the command with its exit code.
func await(ctx context.Context, c client.Client, run client.WorkflowRun, o options) error {
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
		var out contract.PublishOutput
		out, err = awaitVersion(ctx, run, o, stopFollowing)
		result = out
		var edgeCheck *cli.ExitError
		if errors.As(err, &edgeCheck) {
			stopFollowing()
			return err
		}
	} else {
		result, code, err = awaitUpdates(ctx, run, o, stopFollowing)
	}
	stopFollowing()
	if err != nil {
		if o.asJSON {
			cli.PrintJSON(map[string]string{"workflowId": run.GetID(), "error": rootCause(err)})
		}
		return cli.Fail(cli.ExitFailed, "publish: %s failed: %s", run.GetID(), rootCause(err))
	}
	if o.asJSON {
		cli.PrintJSON(result)
	}
	return cli.Code(code)
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
			// The run succeeded; the edge does not serve it.
			return out, cli.Fail(cli.ExitFailed, "publish: %v", err)
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
