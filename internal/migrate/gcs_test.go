package migrate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSourceLocation(t *testing.T) {
	for in, want := range map[string]Location{
		"gs://my_bucket":               {Bucket: "my_bucket", Provider: ProviderGCS},
		"gs://assets.example.com/img/": {Bucket: "assets.example.com", Prefix: "img/", Provider: ProviderGCS},
		"gs://b-1/été/":                {Bucket: "b-1", Prefix: "été/", Provider: ProviderGCS},
		"s3://bucket/p":                {Bucket: "bucket", Prefix: "p"},
	} {
		got, err := ParseSourceLocation(in)
		if err != nil || got != want {
			t.Errorf("ParseSourceLocation(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, err := ParseSourceLocation(got.String()); err != nil || back != got || got.String() != in {
			t.Errorf("%q: String %q parses back as %+v, %v", in, got.String(), back, err)
		}
	}
	for in, wantErr := range map[string]string{
		"gs://":            "empty",
		"gs://ab":          "3 to 63",
		"gs://Bucket":      "character 'B'",
		"gs://google-ish":  `"goog"`,
		"gs://10.0.0.1":    "IP address",
		"gs://-b-":         "starts and ends",
		"gs://a..b":        "dot-separated",
		"http://b/x":       "s3://BUCKET[/PREFIX] or gs://BUCKET[/PREFIX]",
		"gs://b_1/\xff":    "UTF-8",
		"s3://my_bucket/x": "character '_'", // S3 rules for s3://
	} {
		if l, err := ParseSourceLocation(in); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParseSourceLocation(%q) = %+v, %v; want an error with %q", in, l, err, wantErr)
		}
	}
	// A destination is S3 only.
	if _, err := ParseLocation("gs://bucket"); err == nil {
		t.Error("ParseLocation accepted gs://")
	}
}

// A service-account key file given to the starter is read, sealed like S3
// keys and opened only with the codec keys: the JSON shows nowhere in plain
// text. Without the file, nothing is sealed for the source (the workers use
// their application default credentials), and no S3 source keys are asked for.
func TestGCSKeyIsSealed(t *testing.T) {
	const private = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
	key, _ := json.Marshal(map[string]string{"type": "service_account", "client_email": "mig@p.iam.gserviceaccount.com", "private_key": private})
	path := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(path, key, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{EnvDestAccessKey: "dst-access", EnvDestSecretKey: "dst-secret", EnvSourceGCSCredentialsFile: path}
	getenv := func(k string) string { return env[k] }
	src, dst, err := LoadCredentialsFor(getenv, "", ProviderGCS)
	if err != nil {
		t.Fatal(err)
	}
	if src.GCSKey != string(key) || dst.AccessKey != "dst-access" || src.AccessKey != "" {
		t.Fatalf("loaded %d bytes of key for the source, dest %q; want the file's %d bytes", len(src.GCSKey), dst.AccessKey, len(key))
	}
	r := testKeyring(t, "k1")
	gsOld := StoreBinding{Provider: ProviderGCS, Bucket: "old-assets"}
	sealed, err := SealCredentials(r, src, "job-g", SideSource, gsOld)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(struct {
		Source SealedCredentials `json:"source"`
	}{sealed})
	for _, shown := range []string{string(js), sealed.String(), fmt.Sprintf("%v %+v %#v", sealed, src, src)} {
		for _, secret := range []string{"PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "service_account"} {
			if strings.Contains(shown, secret) {
				t.Fatalf("the sealed key shows %q: %s", secret, shown)
			}
		}
	}
	if _, err := json.Marshal(src); err == nil {
		t.Error("plain credentials with a GCS key marshalled")
	}
	opened, err := sealed.Open(r, "job-g", SideSource, gsOld)
	if err != nil || opened.GCSKey != string(key) {
		t.Fatalf("opened %d bytes, %v; want the key back", len(opened.GCSKey), err)
	}
	if _, err := sealed.Open(r, "job-g", SideDest, gsOld); err == nil {
		t.Error("the source's key opened as the destination's")
	}

	// Application default credentials: nothing to read or seal.
	delete(env, EnvSourceGCSCredentialsFile)
	if src, _, err = LoadCredentialsFor(getenv, "", ProviderGCS); err != nil || !src.IsZero() {
		t.Errorf("without a key file: %v, zero %v; want no source credentials and no error", err, src.IsZero())
	}
	// An S3 source still needs its keys.
	if _, _, err := LoadCredentialsFor(getenv, "", ""); err == nil || !strings.Contains(err.Error(), EnvSourceAccessKey) {
		t.Errorf("S3 source without keys: %v", err)
	}
	// A missing or empty key file is named, its contents never quoted.
	env[EnvSourceGCSCredentialsFile] = filepath.Join(t.TempDir(), "missing.json")
	if _, _, err := LoadCredentialsFor(getenv, "", ProviderGCS); err == nil || !strings.Contains(err.Error(), EnvSourceGCSCredentialsFile) {
		t.Errorf("missing key file: %v", err)
	}
	// The credentials file may name the key file too.
	creds := filepath.Join(t.TempDir(), "creds")
	_ = os.WriteFile(creds, []byte(EnvSourceGCSCredentialsFile+"="+path+"\n"+EnvDestAccessKey+"=a\n"+EnvDestSecretKey+"=b\n"), 0o600)
	if src, _, err := LoadCredentialsFor(func(string) string { return "" }, creds, ProviderGCS); err != nil || src.GCSKey != string(key) {
		t.Errorf("key file named in the credentials file: %d bytes, %v", len(src.GCSKey), err)
	}
}
