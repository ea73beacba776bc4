package main

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// --max-reporters-per-minute sets the room's bound on the gates it takes
// reports from in a minute; without it the setting is left as it was.
func TestMaxReportersPerMinuteFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{{[]string{"--max-reporters-per-minute", "300"}, 300}, {nil, 7}} {
		var f settingsFlags
		fs := pflag.NewFlagSet("update", pflag.ContinueOnError)
		f.register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		s := admit.Settings{MaxReportersPerMinute: 7}
		if err := f.apply(fs, &s); err != nil {
			t.Fatal(err)
		}
		if s.MaxReportersPerMinute != c.want {
			t.Errorf("%v: %d, want %d", c.args, s.MaxReportersPerMinute, c.want)
		}
	}
}

// --always-use-https and --queue-capacity set their settings.
func TestAlwaysUseHTTPSAndQueueCapacityFlags(t *testing.T) {
	var f settingsFlags
	fs := pflag.NewFlagSet("update", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse([]string{"--always-use-https", "--queue-capacity", "5000"}); err != nil {
		t.Fatal(err)
	}
	var s admit.Settings
	if err := f.apply(fs, &s); err != nil {
		t.Fatal(err)
	}
	if !s.AlwaysUseHTTPS || s.QueueCapacity != 5000 {
		t.Errorf("settings %+v", s)
	}
}
