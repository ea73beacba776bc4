package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes, the same for every binary and starter.
const (
	ExitOK          = 0
	ExitFailed      = 1 // the workflow or check failed
	ExitUsage       = 2 // bad flags or input
	ExitUnavailable = 3 // Temporal or a store could not be reached
)

// ExitError ends a command with Code; Err, when set, is printed to stderr
// first. Commands return it instead of exiting, so that their deferred
// closes run; Execute exits once they have.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Fail is the error that prints the message and exits with code.
func Fail(code int, format string, args ...any) error {
	return &ExitError{Code: code, Err: fmt.Errorf(format, args...)}
}

// Code is the error that exits with code saying nothing more (the command
// has printed what there is to say), or nil for ExitOK.
func Code(code int) error {
	if code == ExitOK {
		return nil
	}
	return &ExitError{Code: code}
}

// Execute runs root on the process's arguments and exits with the code
// Run returns: every deferred call of the command has run by then. The
// root takes the name the binary was called by (bin/edgeflow-schedule,
// say), so help and completion scripts name what the user types.
func Execute(root *cobra.Command) {
	if name := filepath.Base(os.Args[0]); name != "" && name != "." && name != root.Name() {
		root.Use = name + strings.TrimPrefix(root.Use, root.Name())
	}
	os.Exit(Run(context.Background(), root, os.Args[1:], os.Stdout, os.Stderr))
}

// Run runs root on args and returns the exit code: 0 after help, the
// version or completion; 2 after an unknown command, flag or argument (the
// command has not run); an ExitError's code; 1 for any other error of the
// command, printed as "command: error". AtExit's work runs before it
// returns.
func Run(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	prepare(root)
	root.SetArgs(longFlags(root, args))
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	code := exitCode(cmd, err, stderr)
	runAtExit()
	return code
}

func exitCode(cmd *cobra.Command, err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var exit *ExitError
	if errors.As(err, &exit) {
		if exit.Err != nil {
			fmt.Fprintln(stderr, exit.Err)
		}
		return exit.Code
	}
	// Not from a command's body (those are ExitErrors, see prepare): the
	// command line itself is wrong.
	path := "command"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", path, err, path)
	return ExitUsage
}

// prepare sets up a tree the project's way: errors printed by Run, not by
// cobra; --version on the root (unless the root has a flag of that name,
// as publish's --version V has: then a version subcommand); and every
// command's error made an ExitError, so that Run tells a failed command
// (1, or its code) from a wrong command line (2).
func prepare(root *cobra.Command) {
	if root.Annotations["cli.prepared"] != "" {
		return
	}
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations["cli.prepared"] = "yes"
	root.SilenceErrors, root.SilenceUsage = true, true
	if root.Flags().Lookup("version") == nil {
		root.Version = Version()
		root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	} else {
		root.AddCommand(&cobra.Command{
			Use: "version", Short: "Print the version of " + root.Name() + " (module version and commit)",
			Example: "  " + root.Name() + " version", Args: cobra.NoArgs,
			Run: func(c *cobra.Command, _ []string) { fmt.Fprintln(c.OutOrStdout(), root.Name(), Version()) },
		})
	}
	walk(root, func(c *cobra.Command) {
		if c.RunE == nil {
			return
		}
		body := c.RunE
		c.RunE = func(c *cobra.Command, args []string) error {
			err := body(c, args)
			var exit *ExitError
			if err == nil || errors.As(err, &exit) {
				return err
			}
			return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%s: %w", c.CommandPath(), err)}
		}
	})
}

func walk(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		walk(sub, f)
	}
}

// Group makes cmd a command of subcommands only: without one it shows its
// usage and exits 2, and an unknown one exits 2 naming the nearest.
func Group(cmd *cobra.Command) *cobra.Command {
	// Its usage names its commands, not a run of its own (its subcommands,
	// which inherit the template, have none of theirs).
	cmd.SetUsageTemplate(strings.Replace(cmd.UsageTemplate(), "Usage:{{if .Runnable}}", "Usage:{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			fmt.Fprint(c.ErrOrStderr(), c.UsageString())
			return Fail(ExitUsage, "%s: a command is required", c.CommandPath())
		}
		msg := fmt.Sprintf("%s: unknown command %q", c.CommandPath(), args[0])
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2
		}
		if near := c.SuggestionsFor(args[0]); len(near) > 0 {
			msg += "; did you mean " + strings.Join(near, " or ") + "?"
		}
		return Fail(ExitUsage, "%s\nRun '%s --help' for usage.", msg, c.CommandPath())
	}
	return cmd
}

// NoArgs refuses any positional argument; Args checks their number and
// names what it wants.
func NoArgs(c *cobra.Command, args []string) error { return Args(0, 0, "")(c, args) }

// Args accepts between min and max positional arguments (max < 0: any),
// described by what ("a job ID", say) in the refusal.
func Args(min, max int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		switch {
		case max == 0 && len(args) > 0:
			return fmt.Errorf("unexpected arguments %q (flags only)", args)
		case len(args) < min || (max >= 0 && len(args) > max):
			return fmt.Errorf("want %s, got %q", what, args)
		}
		return nil
	}
}

// longFlags rewrites -name[=value] to --name[=value] where name is a long
// flag of the command the arguments run: Go's flag package, which every
// binary used before, took both, and scripts and docs still say -json or
// -s3-endpoint; pflag would read them as a run of one-letter flags.
func longFlags(root *cobra.Command, args []string) []string {
	cmd := root
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		for _, sub := range cmd.Commands() {
			if sub.Name() == a || sub.HasAlias(a) {
				cmd = sub
				break
			}
		}
	}
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	known := func(name string) bool {
		return cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			if name, _, _ := strings.Cut(a[1:], "="); len(name) > 1 && known(name) {
				a = "-" + a
			}
		}
		out[i] = a
	}
	return out
}
