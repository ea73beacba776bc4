// Command catalog checks a catalog folder: every problem of every package
// file, with file, field and reason.
//
//	go run ./starters/catalog validate [DIR]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
)

func main() {
	fs := flag.NewFlagSet("catalog", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print problems as JSON")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: catalog validate [--json] [DIR]   (DIR defaults to ./catalog)\n"+
			"Exit codes: 0 valid, 1 problems found, 2 bad usage.\n")
		fs.PrintDefaults()
	}
	if len(os.Args) < 2 || os.Args[1] != "validate" {
		fs.Usage()
		os.Exit(cli.ExitUsage)
	}
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(cli.ExitUsage)
	}
	dir := "catalog"
	if fs.NArg() > 0 {
		dir = fs.Arg(0)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		cli.Exit(cli.ExitUsage, "catalog: %s is not a directory", dir)
	}
	problems := catalog.Validate(dir)
	if *asJSON {
		if problems == nil {
			problems = []catalog.Problem{}
		}
		cli.PrintJSON(problems)
	} else {
		for _, p := range problems {
			fmt.Println(p.String())
		}
	}
	if len(problems) > 0 {
		if !*asJSON {
			fmt.Fprintf(os.Stderr, "%d problems in %s\n", len(problems), dir)
		}
		os.Exit(cli.ExitFailed)
	}
	if !*asJSON {
		pkgs, _ := catalog.Load(dir)
		fmt.Printf("%s: %d packages, no problems\n", dir, len(pkgs))
	}
}
