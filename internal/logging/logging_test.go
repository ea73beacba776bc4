package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

const secret = "hunter2-very-secret"

// A secret passed to a log call under a secret's name never reaches the
// output, in text or JSON; other values do.
func TestSecretsAreRedacted(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		log, err := NewWith("test", &buf, Options{Format: format, Level: "debug"})
		if err != nil {
			t.Fatal(err)
		}
		log.Info("connecting", "S3_SECRET_KEY", secret, "secretKey", secret, "api_key", secret, "Authorization", "Bearer "+secret,
			"password", secret, "sessionToken", secret, "bucket", "cdn-files")
		log.WithGroup("s3").Debug("config", "secret_access_key", secret)
		out := buf.String()
		if strings.Contains(out, secret) {
			t.Errorf("%s: the secret is in the log:\n%s", format, out)
		}
		if !strings.Contains(out, "cdn-files") || strings.Count(out, Redacted) != 7 {
			t.Errorf("%s: want 7 redactions and the bucket:\n%s", format, out)
		}
		if format == "json" {
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil || m["component"] != "test" {
					t.Errorf("not JSON with the component: %q %v", line, err)
				}
			}
		}
	}
}

func TestBadSettingsAreErrors(t *testing.T) {
	if _, err := NewWith("", nil, Options{Format: "xml"}); err == nil || !strings.Contains(err.Error(), "LOG_FORMAT") {
		t.Errorf("format: %v", err)
	}
	if _, err := NewWith("", nil, Options{Level: "loud"}); err == nil || !strings.Contains(err.Error(), "LOG_LEVEL") {
		t.Errorf("level: %v", err)
	}
}
