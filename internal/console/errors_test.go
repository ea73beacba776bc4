package console

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/testenv/syncbuf"
)

// refusingS3 is a job store endpoint that refuses every request, naming
// its bucket in the error as S3 does.
func refusingS3(t *testing.T, bucket string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied to ` + bucket +
			`</Message><BucketName>` + bucket + `</BucketName><Resource>/` + bucket + `</Resource><RequestId>1</RequestId></Error>`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// deadTemporal is an address whose listener hangs up on every connection:
// a Temporal frontend that cannot be reached.
func deadTemporal(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func TestInternalErrorsAreLoggedNotAnswered(t *testing.T) {
	const bucket = "secret-job-bucket"
	store := refusingS3(t, bucket)
	endpoint := strings.TrimPrefix(store.URL, "http://")
	temporalAddr := deadTemporal(t)
	tc, err := client.NewLazyClient(client.Options{HostPort: temporalAddr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	var logs syncbuf.Buffer
	srv := httptest.NewServer(New(Options{Tokens: testTokens(t), Temporal: tc, Timeout: 2 * time.Second,
		JobStore: migrate.JobStoreConfig{S3: s3.Config{Endpoint: endpoint, AccessKey: "k", SecretKey: "secret-key-0123"}, Bucket: bucket},
		Log:      slog.New(slog.NewTextHandler(&logs, nil))}).Handler())
	t.Cleanup(srv.Close)

	for _, c := range []struct {
		name, method, path, secret, body string
		status, code                     int
		what                             string   // what failed, in the answer
		hidden                           []string // never in the answer
		logged                           string   // in the log line of the failure
	}{
		{"job store refuses", "PUT", "/api/v1/migrations/keys/k1", rwSecret, "a\nb\n", http.StatusInternalServerError, CodeInternal, "PUT /api/v1/migrations/keys/{id}", []string{endpoint, bucket}, endpoint},
		{"Temporal unreachable, read-only token", "GET", "/api/v1/waiting_rooms", roSecret, "", http.StatusServiceUnavailable, CodeUnavailable, "Temporal", []string{temporalAddr, "failed reaching server", "rpc error", "tcp"}, "err="},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, env := call(t, srv, c.method, c.path, c.secret, c.body)
			wantError(t, resp, env, c.status, c.code, c.what)
			msg := env.Errors[0].Message
			for _, h := range c.hidden {
				if strings.Contains(msg, h) {
					t.Errorf("the answer %q holds %q", msg, h)
				}
			}
			id := resp.Header.Get("X-Request-Id")
			if id == "" {
				t.Fatal("no X-Request-Id")
			}
			if !strings.Contains(msg, id) {
				t.Errorf("the message %q does not name the request %s", msg, id)
			}
			// The log has the cause under the same id.
			var line string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "request_id="+id) && strings.Contains(l, "err=") {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("no log line with request_id=%s and the error:\n%s", id, logs.String())
			}
			if !strings.Contains(line, c.logged) {
				t.Errorf("the log line does not have the cause (%s): %s", c.logged, line)
			}
		})
	}
}
