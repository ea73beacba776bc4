package migrate_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/testsuite"

	acts "github.com/edgeflow/edgeflow/activities/migrate"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// A job's sealed destination keys copied into an input that names another
// endpoint (an attacker's, who read the victim's input from a history) are
// refused by the worker before it sends a single request there.
func TestSealedKeysAreRefusedForAnotherEndpoint(t *testing.T) {
	var asked atomic.Int64
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	defer attacker.Close()
	k, err := keyring.Generate("bind-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CODEC_KEYS", k.Encode())
	ring, _ := keyring.New(k)
	const secret = "victim-secret-key-0123456789"
	in := contract.JobInput{Job: "victim-job",
		Source: contract.Endpoint{Endpoint: "store.victim.example:9000", Location: migrate.Location{Bucket: "victim-src"}},
		Dest:   contract.Endpoint{Endpoint: "store.victim.example:9000", Location: migrate.Location{Bucket: "victim-dst"}}}
	creds := migrate.Credentials{AccessKey: "victim-access", SecretKey: secret}
	if err := jobclient.Seal(&in, creds, creds); err != nil {
		t.Fatal(err)
	}
	stolen := in
	stolen.Source.Endpoint = strings.TrimPrefix(attacker.URL, "http://")
	stolen.Dest.Endpoint = stolen.Source.Endpoint

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&acts.Activities{Keys: ring})
	_, err = env.ExecuteActivity(contract.PrecheckActivity, contract.PrecheckInput{Job: stolen.Job, Source: stolen.Source, Dest: stolen.Dest})
	if err == nil || !strings.Contains(err.Error(), "source credentials of job victim-job do not open") {
		t.Fatalf("precheck with the keys moved to another endpoint: %v, want them refused naming the side", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("the error shows the secret: %v", err)
	}
	if n := asked.Load(); n > 0 {
		t.Fatalf("the other endpoint was sent %d requests", n)
	}
}
