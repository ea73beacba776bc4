// Command catalog checks a catalog folder and previews what a library's
// fileMap selects from a real release.
//
//	go run ./starters/catalog validate [--strict] [--json] [DIR]
//	go run ./starters/catalog preview NAME [--version V] [--catalog DIR] [--json]
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/release"
	"github.com/edgeflow/edgeflow/internal/publish/tarx"
)

func main() { cli.Execute(newRootCommand()) }

func newRootCommand() *cobra.Command {
	root := cli.Group(&cobra.Command{
		Use:   "catalog",
		Short: "Check a catalog folder and preview what a library's fileMap selects",
		Example: `  catalog validate --strict ./catalog
  catalog preview mitt --version 3.0.1`,
	})
	var asJSON, strict bool
	validateCmd := &cobra.Command{
		Use:   "validate [DIR]",
		Short: "Every problem of every library file under DIR (default ./catalog), with file, field and reason",
		Long: `Every problem of every library file under DIR (default ./catalog), with file,
field and reason. Exit 0 when there are only warnings, 1 on any error (with
--strict, on any warning too), 2 on bad usage.`,
		Example: `  catalog validate
  catalog validate --strict --json ./my-catalog`,
		Args: cli.Args(0, 1, "one folder at most"),
		RunE: func(_ *cobra.Command, args []string) error {
			dir := "catalog"
			if len(args) == 1 {
				dir = args[0]
			}
			return validate(dir, asJSON, strict)
		},
	}
	validateCmd.Flags().BoolVar(&asJSON, "json", false, "print the problems and the summary as JSON")
	validateCmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")

	var p previewFlags
	previewCmd := &cobra.Command{
		Use:   "preview NAME",
		Short: "The files the fileMap of library NAME selects from its real release",
		Long: `The files the fileMap of library NAME selects from its real release (the latest
stable one, or --version), one per line, as they would be published. Needs only
the registry; publishes nothing. Exit 1 when the release cannot be fetched or the
fileMap selects nothing.`,
		Example: `  catalog preview jquery
  catalog preview mitt --version 3.0.1 --catalog ./my-catalog --json`,
		Args: cli.Args(1, 1, "exactly one library name"),
		RunE: func(_ *cobra.Command, args []string) error { return preview(args[0], p) },
	}
	fs := previewCmd.Flags()
	fs.StringVar(&p.version, "version", "", "the release to preview (default: the latest stable one not ignored)")
	fs.StringVar(&p.dir, "catalog", config.Env("CATALOG_DIR", "catalog"), "catalog directory (env CATALOG_DIR)")
	fs.BoolVar(&p.asJSON, "json", false, "print the selection as JSON")
	fs.StringVar(&p.npmURL, "npm-registry", config.Env("NPM_REGISTRY", registry.DefaultNPMURL), "npm registry base URL (env NPM_REGISTRY)")
	fs.StringVar(&p.githubURL, "github-api", config.Env("GITHUB_API", "https://api.github.com"), "GitHub API base URL (env GITHUB_API; token from GITHUB_TOKEN)")
	fs.DurationVar(&p.timeout, "timeout", 5*time.Minute, "give up after this long")
	root.AddCommand(validateCmd, previewCmd)
	return root
}

func validate(dir string, asJSON, strict bool) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return cli.Fail(cli.ExitUsage, "catalog: %s is not a directory", dir)
	}
	start := time.Now()
	summary, problems, err := catalog.Summarize(dir)
	if err != nil {
		return cli.Fail(cli.ExitFailed, "catalog: %v", err)
	}
	failed := summary.Errors > 0 || (strict && summary.Warnings > 0)
	if asJSON {
		if problems == nil {
			problems = []catalog.Problem{}
		}
		cli.PrintJSON(struct {
			Problems []catalog.Problem `json:"problems"`
			Summary  catalog.Summary   `json:"summary"`
			Strict   bool              `json:"strict"`
			Valid    bool              `json:"valid"`
		}{problems, summary, strict, !failed})
	} else {
		for _, p := range problems {
			if strict && p.IsWarning() {
				p.Severity = catalog.Error
			}
			fmt.Println(p.String())
		}
		fmt.Printf("%s: %d libraries (%d updated, %d kept without autoupdate) from %d files; %d errors, %d warnings%s (%.1fs)\n",
			dir, summary.Libraries, summary.Updated, summary.Kept, summary.Files, summary.Errors, summary.Warnings,
			strictNote(strict, summary), time.Since(start).Seconds())
		if summary.Errors == 0 && summary.Warnings == 0 {
			fmt.Printf("%s: no problems\n", dir)
		}
	}
	if failed {
		return cli.Code(cli.ExitFailed)
	}
	return nil
}

func strictNote(strict bool, s catalog.Summary) string {
	if strict && s.Warnings > 0 {
		return " (--strict: warnings count as errors)"
	}
	return ""
}

// previewFlags are preview's flags.
type previewFlags struct {
	version, dir, npmURL, githubURL string
	asJSON                          bool
	timeout                         time.Duration
}

func preview(name string, f previewFlags) error {
	pkg, err := catalog.Find(f.dir, name)
	if err != nil {
		return cli.Fail(cli.ExitUsage, "catalog preview: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	client := &http.Client{Timeout: f.timeout}
	src := release.Sources{
		NPM:    &registry.NPM{BaseURL: f.npmURL, Client: client},
		GitHub: &registry.GitHub{BaseURL: f.githubURL, Token: config.Env("GITHUB_TOKEN", ""), Client: client},
		HTTP:   client,
	}
	p, err := src.PreviewVersion(ctx, pkg, f.version, "", tarx.DefaultLimits)
	if err != nil {
		return cli.Fail(cli.ExitFailed, "catalog preview: %s: %v", pkg.Name, err)
	}
	printPreview(os.Stdout, os.Stderr, p, f.asJSON)
	if len(p.Selected) == 0 {
		return cli.Code(cli.ExitFailed)
	}
	return nil
}

// printPreview writes the selected files to out, one per line (or as
// JSON), and the summary to info: stdout holds nothing but the files.
func printPreview(out, info io.Writer, p *release.Preview, asJSON bool) {
	if asJSON {
		files := make([]string, len(p.Selected))
		for i, s := range p.Selected {
			files[i] = s.Output
		}
		cli.PrintJSON(map[string]any{"name": p.Name, "version": p.Version, "releaseFiles": p.Files, "files": files, "skipped": p.Skipped})
		return
	}
	for _, s := range p.Selected {
		fmt.Fprintln(out, s.Output)
	}
	fmt.Fprintf(info, "%s@%s: the fileMap selects %d of the release's %d files\n", p.Name, p.Version, len(p.Selected), p.Files)
	for _, s := range p.Skipped {
		fmt.Fprintf(info, "  not extracted: %s (%s)\n", s.Path, s.Reason)
	}
	if len(p.Selected) == 0 {
		fmt.Fprintf(info, "%s@%s: nothing selected: that version would be skipped, not published\n", p.Name, p.Version)
	}
}
