// Command catalog checks a catalog folder and previews what a library's
// fileMap selects from a real release.
//
//	go run ./starters/catalog validate [--strict] [--json] [DIR]
//	go run ./starters/catalog preview NAME [--version V] [--catalog DIR] [--json]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/release"
	"github.com/edgeflow/edgeflow/internal/publish/tarx"
)

const usage = `Usage:
  catalog validate [--strict] [--json] [DIR]
      Every problem of every library file under DIR (default ./catalog), with
      file, field and reason. Exit 0 when there are only warnings, 1 on any
      error (with --strict, on any warning too), 2 on bad usage.
  catalog preview NAME [--version V] [--catalog DIR] [--json]
      The files the fileMap of library NAME selects from its real release
      (the latest stable one, or V), one per line, as they would be published.
      Needs only the registry; publishes nothing. Exit 1 when the release
      cannot be fetched or the fileMap selects nothing.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(cli.ExitUsage)
	}
	switch os.Args[1] {
	case "validate":
		validate(os.Args[2:])
	case "preview":
		preview(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprint(os.Stderr, usage)
		cli.Exit(cli.ExitUsage, "catalog: unknown command %q", os.Args[1])
	}
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("catalog "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterspersed parses flags that may come before or after the
// positional arguments ("preview mitt --version 3.0.1").
func parseInterspersed(fs *flag.FlagSet, args []string) []string {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			os.Exit(cli.ExitUsage)
		}
		if fs.NArg() == 0 {
			return positional
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func validate(args []string) {
	fs := newFlags("validate")
	asJSON := fs.Bool("json", false, "print the problems and the summary as JSON")
	strict := fs.Bool("strict", false, "treat warnings as errors")
	rest := parseInterspersed(fs, args)
	dir := "catalog"
	switch len(rest) {
	case 0:
	case 1:
		dir = rest[0]
	default:
		cli.Exit(cli.ExitUsage, "catalog validate: one folder at most, got %d", len(rest))
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		cli.Exit(cli.ExitUsage, "catalog: %s is not a directory", dir)
	}
	start := time.Now()
	summary, problems, err := catalog.Summarize(dir)
	if err != nil {
		cli.Exit(cli.ExitFailed, "catalog: %v", err)
	}
	failed := summary.Errors > 0 || (*strict && summary.Warnings > 0)
	if *asJSON {
		if problems == nil {
			problems = []catalog.Problem{}
		}
		cli.PrintJSON(struct {
			Problems []catalog.Problem `json:"problems"`
			Summary  catalog.Summary   `json:"summary"`
			Strict   bool              `json:"strict"`
			Valid    bool              `json:"valid"`
		}{problems, summary, *strict, !failed})
	} else {
		for _, p := range problems {
			if *strict && p.IsWarning() {
				p.Severity = catalog.Error
			}
			fmt.Println(p.String())
		}
		fmt.Printf("%s: %d libraries (%d updated, %d kept without autoupdate) from %d files; %d errors, %d warnings%s (%.1fs)\n",
			dir, summary.Libraries, summary.Updated, summary.Kept, summary.Files, summary.Errors, summary.Warnings,
			strictNote(*strict, summary), time.Since(start).Seconds())
		if summary.Errors == 0 && summary.Warnings == 0 {
			fmt.Printf("%s: no problems\n", dir)
		}
	}
	if failed {
		os.Exit(cli.ExitFailed)
	}
}

func strictNote(strict bool, s catalog.Summary) string {
	if strict && s.Warnings > 0 {
		return " (--strict: warnings count as errors)"
	}
	return ""
}

func preview(args []string) {
	fs := newFlags("preview")
	version := fs.String("version", "", "the release to preview (default: the latest stable one not ignored)")
	dir := fs.String("catalog", config.Env("CATALOG_DIR", "catalog"), "catalog directory (env CATALOG_DIR)")
	asJSON := fs.Bool("json", false, "print the selection as JSON")
	npmURL := fs.String("npm-registry", config.Env("NPM_REGISTRY", registry.DefaultNPMURL), "npm registry base URL (env NPM_REGISTRY)")
	githubURL := fs.String("github-api", config.Env("GITHUB_API", "https://api.github.com"), "GitHub API base URL (env GITHUB_API; token from GITHUB_TOKEN)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	rest := parseInterspersed(fs, args)
	if len(rest) != 1 {
		fs.Usage()
		cli.Exit(cli.ExitUsage, "catalog preview: give exactly one library name")
	}
	pkg, err := catalog.Find(*dir, rest[0])
	if err != nil {
		cli.Exit(cli.ExitUsage, "catalog preview: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	client := &http.Client{Timeout: *timeout}
	src := release.Sources{
		NPM:    &registry.NPM{BaseURL: *npmURL, Client: client},
		GitHub: &registry.GitHub{BaseURL: *githubURL, Token: config.Env("GITHUB_TOKEN", ""), Client: client},
		HTTP:   client,
	}
	p, err := src.PreviewVersion(ctx, pkg, *version, "", tarx.DefaultLimits)
	if err != nil {
		cli.Exit(cli.ExitFailed, "catalog preview: %s: %v", pkg.Name, err)
	}
	printPreview(os.Stdout, os.Stderr, p, *asJSON)
	if len(p.Selected) == 0 {
		os.Exit(cli.ExitFailed)
	}
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
