package main

import (
	"encoding/json"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
)

func gcsJobFlags(t *testing.T, args ...string) *jobFlags {
	t.Helper()
	fs := pflag.NewFlagSet("start", pflag.ContinueOnError)
	var f jobFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &f
}

// A gs:// source needs no endpoint and no S3 keys; its key file is sealed
// into the job's input and shows nowhere in it; what does not apply to GCS
// is refused by flag.
func TestStartWithGCSSource(t *testing.T) {
	k, err := keyring.Generate("t1")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CODEC_KEYS", k.Encode())
	t.Setenv(migrate.EnvDestAccessKey, "dst-access")
	t.Setenv(migrate.EnvDestSecretKey, "dst-secret")
	t.Setenv(migrate.EnvSourceAccessKey, "")
	t.Setenv(migrate.EnvSourceSecretKey, "")
	const marker = "fake-private-key-9c1e"
	key, _ := json.Marshal(map[string]string{"type": "service_account", "private_key": marker})
	path := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(path, key, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(migrate.EnvSourceGCSCredentialsFile, path)
	dest := []string{"--dest", "s3://dst/copy/", "--dest-endpoint", "127.0.0.1:9000"}

	in, problems := gcsJobFlags(t, append([]string{"--source", "gs://old_assets/img/"}, dest...)...).input("job-g1")
	if len(problems) > 0 {
		t.Fatalf("refused: %v", problems)
	}
	if in.Source.Provider != migrate.ProviderGCS || in.Source.Bucket != "old_assets" || in.Source.Prefix != "img/" || in.Source.Endpoint != "" {
		t.Fatalf("source %+v", in.Source)
	}
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), marker) || strings.Contains(string(js), "service_account") {
		t.Fatalf("the job's input shows the key: %s", js)
	}
	ring, _ := keyring.Codec.Load()
	creds, err := in.Source.Credentials.Open(ring, "job-g1", migrate.SideSource, in.Source.Store())
	if err != nil || creds.GCSKey != string(key) {
		t.Fatalf("the sealed key opens as %d bytes, %v", len(creds.GCSKey), err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--source", "gs://old_assets", "--source-endpoint", "storage.googleapis.com:443"}, "--source-endpoint, --source-insecure and --source-region do not apply"},
		{[]string{"--source", "gs://Old"}, "--source"},
		{[]string{"--source", "s3://src"}, "--source-endpoint is required"},
	} {
		_, problems := gcsJobFlags(t, append(tc.args, dest...)...).input("job-g2")
		if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
			t.Errorf("%v: problems %q; want %q", tc.args, problems, tc.want)
		}
	}
	// A key file of another type is refused, its contents never quoted.
	other, _ := json.Marshal(map[string]string{"type": "external_account", "credential_source": marker})
	if err := os.WriteFile(path, other, 0o600); err != nil {
		t.Fatal(err)
	}
	_, problems = gcsJobFlags(t, append([]string{"--source", "gs://old_assets"}, dest...)...).input("job-g3")
	if got := strings.Join(problems, "\n"); !strings.Contains(got, migrate.EnvSourceGCSCredentialsFile) || strings.Contains(got, marker) {
		t.Errorf("external_account key file: %q", got)
	}
}
