package config

import (
	"strconv"

	"github.com/spf13/pflag"
)

// Alias registers old as a second, hidden name of fs's flag current: both
// set the same value, and only current shows in help. Renamed flags keep
// their old spelling working this way for a release.
func Alias(fs *pflag.FlagSet, current, old string) {
	f := fs.Lookup(current)
	if f == nil {
		panic("config.Alias: no flag --" + current)
	}
	fs.AddFlag(&pflag.Flag{Name: old, Usage: "the old name of --" + current, Value: f.Value,
		DefValue: f.DefValue, NoOptDefVal: f.NoOptDefVal, Hidden: true})
}

// InsecureFlag registers the boolean flag name, set when the connection is
// plain HTTP, over *secure (its opposite, which the store's settings hold),
// and oldSecure as a hidden flag of the old polarity over the same value.
// *secure holds the default when called.
func InsecureFlag(fs *pflag.FlagSet, secure *bool, name, oldSecure, usage string) {
	insecure := negatedBool{secure}
	fs.AddFlag(&pflag.Flag{Name: name, Usage: usage, Value: insecure, DefValue: insecure.String(), NoOptDefVal: "true"})
	fs.BoolVar(secure, oldSecure, *secure, "the old, opposite spelling of --"+name)
	_ = fs.MarkHidden(oldSecure)
}

// negatedBool is a boolean flag that sets the opposite of what it is given.
type negatedBool struct{ p *bool }

func (n negatedBool) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*n.p = !b
	return nil
}

func (n negatedBool) String() string { return strconv.FormatBool(n.p != nil && !*n.p) }
func (negatedBool) Type() string     { return "bool" }

// OptionalBool is a boolean flag that also knows whether it was given:
// unset, a profile or the environment decides.
type OptionalBool struct{ Given, Value bool }

// Set parses a boolean given on the command line.
func (o *OptionalBool) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	o.Given, o.Value = true, b
	return nil
}

func (o *OptionalBool) String() string {
	if !o.Given {
		return ""
	}
	return strconv.FormatBool(o.Value)
}

// Type is what help shows after the flag: nothing, as for any bool.
func (o *OptionalBool) Type() string { return "bool" }
