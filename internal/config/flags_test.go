package config_test

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/edgeflow/edgeflow/internal/config"
)

func parse(t *testing.T, register func(*pflag.FlagSet), args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return fs
}

// The connection flags carry the temporal CLI's names; the old ones set
// the same values and are hidden.
func TestTemporalFlagNames(t *testing.T) {
	var now, old config.Temporal
	parse(t, now.RegisterFlags, "--address", "h:1", "--namespace", "ns", "--profile", "p", "--config-file", "f.toml")
	fs := parse(t, old.RegisterFlags, "--temporal-address", "h:1", "-n", "ns", "--temporal-profile", "p", "--temporal-config-file", "f.toml")
	if now != old || now.HostPort != "h:1" || now.Namespace != "ns" || now.Profile != "p" || now.ConfigFile != "f.toml" {
		t.Errorf("new names %+v, old names %+v", now, old)
	}
	help := fs.FlagUsages()
	for _, name := range []string{"temporal-address", "temporal-profile", "temporal-config-file"} {
		if !fs.Lookup(name).Hidden || strings.Contains(help, name) {
			t.Errorf("--%s shows in help:\n%s", name, help)
		}
	}
	for _, name := range []string{"--address", "--namespace", "--profile", "--config-file", "--api-key", "--tls ", "--tls-cert-path",
		"--tls-key-path", "--tls-ca-path", "--tls-server-name", "--tls-disable-host-verification"} {
		if !strings.Contains(help, name) {
			t.Errorf("help lacks %s:\n%s", name, help)
		}
	}
}

// --api-key and the --tls-* flags reach the client's options over the
// environment and the profile, as the temporal CLI's do.
func TestTemporalFlagsOverTheEnvironment(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "env:7233")
	t.Setenv("TEMPORAL_TLS_SERVER_NAME", "from-env")
	var tc config.Temporal
	parse(t, tc.RegisterFlags, "--address", "flag:7233", "--api-key", "k", "--tls-server-name", "temporal.test", "--tls-disable-host-verification")
	opts, err := tc.Options(nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts.HostPort != "flag:7233" || opts.Credentials == nil || opts.ConnectionOptions.TLS == nil ||
		opts.ConnectionOptions.TLS.ServerName != "temporal.test" || !opts.ConnectionOptions.TLS.InsecureSkipVerify {
		t.Errorf("options %+v, TLS %+v", opts, opts.ConnectionOptions.TLS)
	}

	t.Setenv("TEMPORAL_TLS", "true")
	var off config.Temporal
	parse(t, off.RegisterFlags, "--tls=false")
	if opts, err = off.Options(nil); err != nil || !opts.ConnectionOptions.TLSDisabled {
		t.Errorf("--tls=false over TEMPORAL_TLS=true: TLS disabled %v, %v", opts.ConnectionOptions.TLSDisabled, err)
	}
	var unset config.Temporal
	parse(t, unset.RegisterFlags)
	if opts, err = unset.Options(nil); err != nil || opts.ConnectionOptions.TLS == nil || opts.ConnectionOptions.TLS.ServerName != "from-env" {
		t.Errorf("no TLS flag: the environment's TLS settings hold: %+v, %v", opts.ConnectionOptions, err)
	}
}

// One polarity for TLS to the stores: --s3-insecure and --mirror-insecure,
// defaulting from S3_SECURE and MIRROR_S3_SECURE as before; the old
// --s3-secure and --mirror-secure still work, hidden.
func TestStoreInsecureFlags(t *testing.T) {
	for _, c := range []struct {
		env             string
		args            []string
		primary, mirror bool
	}{
		{"", nil, false, false},
		{"true", nil, true, true},
		{"", []string{"--s3-insecure=false", "--mirror-insecure=false"}, true, true},
		{"true", []string{"--s3-insecure", "--mirror-insecure"}, false, false},
		{"", []string{"--s3-secure", "--mirror-secure"}, true, true},
		{"true", []string{"--s3-secure=false", "--mirror-secure=false"}, false, false},
	} {
		t.Setenv("S3_SECURE", c.env)
		t.Setenv("MIRROR_S3_SECURE", c.env)
		var s config.Storage
		fs := parse(t, s.RegisterFlags, c.args...)
		if s.Primary.Secure != c.primary || s.Mirror.Secure != c.mirror {
			t.Errorf("S3_SECURE=%q %q: secure %v and %v, want %v and %v", c.env, c.args, s.Primary.Secure, s.Mirror.Secure, c.primary, c.mirror)
		}
		help := fs.FlagUsages()
		if strings.Contains(help, "-secure") || !strings.Contains(help, "--s3-insecure") || !strings.Contains(help, "--mirror-insecure") {
			t.Errorf("help shows the old names or lacks the new:\n%s", help)
		}
		if def := fs.Lookup("s3-insecure").DefValue; def != map[bool]string{true: "true", false: "false"}[c.env == ""] {
			t.Errorf("S3_SECURE=%q: --s3-insecure defaults to %s", c.env, def)
		}
	}
}
