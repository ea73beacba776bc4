// Command simulate drives the waiting room's admission engine
// (internal/admit, through internal/admit/sim) through virtual traffic and
// writes what it found into a directory: the FIFO and random heatmaps of the
// experiment in Cloudflare's "Waiting Room: Random Queueing and Custom
// Web/Mobile Apps" and wait estimates as PNG images, the allocation accuracy
// table, fairness, and how far one room scales, as report.md and report.json.
//
//	go run ./cmd/simulate --out DIR [--seed N]
//
// Everything but the timings (the scale section's decisions per second) is
// the same for the same seed and flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/edgeflow/edgeflow/internal/admit/sim"
	"github.com/edgeflow/edgeflow/internal/cli"
)

// options are the command's flags.
type options struct {
	out                string
	seed               uint64
	dataCenters, gates int
	delay, reports     time.Duration
	visitors           int
	window             time.Duration
	profiles           []string
	strategies         []string
	scale              bool
	borrow             bool
}

func main() { cli.Execute(newRootCommand()) }

func newRootCommand() *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "simulate --out DIR",
		Short: "Drive the waiting room's admission engine through virtual traffic and write a report",
		Long: `Drives the waiting room's admission engine (internal/admit, through
internal/admit/sim) through virtual traffic and writes what it found into --out:
the FIFO and random heatmaps and the wait estimates as SVG pictures, the
allocation accuracy table, fairness, and how far one room scales, as report.md
and report.json. Everything but the timings is the same for the same seed and
flags.`,
		Example: `  simulate --out docs/simulate --seed 1
  simulate --out /tmp/sim --visitors 2000 --window 10m --scale=false`,
		Args: cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			o, err := f.check(nil)
			if err != nil {
				return cli.Fail(cli.ExitUsage, "simulate: %v", err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			start := time.Now()
			rep, err := simulate(ctx, o, os.Stderr)
			if err != nil {
				return cli.Fail(cli.ExitFailed, "simulate: %v", err)
			}
			fmt.Printf("wrote %s in %s\n", strings.Join(rep.Files, ", "), time.Since(start).Round(100*time.Millisecond))
			fmt.Print(allocationMarkdown(rep.Allocation))
			return nil
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// simFlags are the command's flags as given, before they are checked.
type simFlags struct {
	o                    options
	profiles, strategies string
}

func (f *simFlags) register(fs *pflag.FlagSet) {
	o := &f.o
	fs.StringVar(&o.out, "out", "", "directory to write the images and reports into (created)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed: the same seed and flags give the same results")
	fs.IntVar(&o.dataCenters, "data-centers", 5, "data centers")
	fs.IntVar(&o.gates, "gates", 4, "gates per data center")
	fs.DurationVar(&o.delay, "propagation-delay", 5*time.Second, "how long a published snapshot takes to reach the gates (whole seconds)")
	fs.DurationVar(&o.reports, "report-interval", 5*time.Second, "how often gates report to the room (whole seconds)")
	fs.IntVar(&o.visitors, "visitors", 10000, "visitors of the FIFO/random experiment")
	fs.DurationVar(&o.window, "window", 30*time.Minute, "over how long the FIFO/random experiment's visitors arrive")
	fs.StringVar(&f.profiles, "profiles", strings.Join(sim.Profiles, ","), "arrival profiles of the allocation table")
	fs.StringVar(&f.strategies, "strategies", strings.Join(sim.Strategies, ","), "strategies of the allocation table")
	fs.BoolVar(&o.scale, "scale", true, "measure the engine's decisions per second and the room's load as it grows")
	fs.BoolVar(&o.borrow, "borrow-reserved", true, "also run counters with the proposed fix: late in a minute, borrow reserved slots nobody claimed")
}

// parseFlags parses args as the command does and checks them.
func parseFlags(args []string) (options, error) {
	var f simFlags
	fs := pflag.NewFlagSet("simulate", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return f.o, err
	}
	return f.check(fs.Args())
}

// check says everything wrong with the flags at once.
func (f *simFlags) check(positional []string) (options, error) {
	o, profiles, strategies := f.o, f.profiles, f.strategies
	if len(positional) > 0 {
		return o, fmt.Errorf("unexpected argument %q (flags only)", positional[0])
	}
	var problems []string
	if o.out == "" {
		problems = append(problems, "--out: required (the directory to write into)")
	}
	if o.visitors < 1 || o.visitors > 1_000_000 {
		problems = append(problems, fmt.Sprintf("--visitors: must be 1-1000000, got %d", o.visitors))
	}
	if o.window < time.Minute || o.window%time.Minute != 0 {
		problems = append(problems, fmt.Sprintf("--window: must be whole minutes, at least one, got %s", o.window))
	}
	var err error
	if o.profiles, err = list(profiles, sim.Profiles); err != nil {
		problems = append(problems, "--profiles: "+err.Error())
	}
	if o.strategies, err = list(strategies, sim.Strategies); err != nil {
		problems = append(problems, "--strategies: "+err.Error())
	}
	top := sim.Config{Topology: sim.Topology{DataCenters: o.dataCenters, GatesPerDataCenter: o.gates, PropagationDelay: o.delay, ReportInterval: o.reports},
		Profile: sim.SourceExperiment(1, time.Minute), Duration: time.Minute}.WithDefaults()
	if err := top.Validate(); err != nil {
		for _, e := range strings.Split(err.Error(), "\n") {
			problems = append(problems, flagName(e))
		}
	}
	if len(problems) > 0 {
		return o, errors.New(strings.Join(problems, "\n  "))
	}
	o.out = filepath.Clean(o.out)
	return o, nil
}

// flagName names the flag behind a topology problem.
func flagName(problem string) string {
	for _, f := range [][2]string{
		{"data centers:", "--data-centers"},
		{"gates per data center:", "--gates"},
		{"propagation delay:", "--propagation-delay"},
		{"report interval:", "--report-interval"},
	} {
		if rest, ok := strings.CutPrefix(problem, f[0]); ok {
			return f[1] + ":" + rest
		}
	}
	return problem
}

// list parses a comma-separated list of known names, keeping their order.
func list(s string, known []string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("unknown %q (known: %s)", name, strings.Join(known, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("none given (known: %s)", strings.Join(known, ", "))
	}
	return out, nil
}
