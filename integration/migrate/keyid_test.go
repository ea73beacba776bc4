package migrate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/temporalproto"

	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// An access key ID names an account: it appears in no error, neither in
// the starter's output nor in a job's history, whether the key is refused
// by the store or the endpoint by the S3 client.
func TestAccessKeyIDNeverInErrors(t *testing.T) {
	startWorker(t, 3)
	const keyID = "AKIAWRONGKEYID0000042"
	srcBucket := migratetest.Bucket(t, env.Store, "kid-src")
	migratetest.Seed(t, env.Store, srcBucket, migratetest.Small("", 3, 10))
	dstBucket := migratetest.Bucket(t, env.Store2, "kid-dst")
	wrong := []string{"MIGRATE_SOURCE_ACCESS_KEY=" + keyID}

	// A key the store does not know: the precheck fails.
	stdout, stderr, code := migrateCLI(t, wrong, append([]string{"start", "--json"}, jobArgs(srcBucket, dstBucket)...)...)
	if code != 1 || !strings.Contains(stdout, "credentials are not accepted") {
		t.Fatalf("start with a wrong key ID: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, keyID) {
		t.Errorf("start shows the access key ID:\n%s\n%s", stdout, stderr)
	}
	// An endpoint the S3 client refuses, by start and by split.
	for _, cmd := range [][]string{{"start"}, {"split", "--parts", "2"}} {
		args := append(cmd, "--source", "s3://"+srcBucket, "--source-endpoint", "x/y:9000", "--source-insecure",
			"--dest", "s3://"+dstBucket, "--dest-endpoint", env.MinIO2.Endpoint, "--dest-insecure")
		stdout, stderr, code := migrateCLI(t, wrong, args...)
		if code == 0 || strings.Contains(stdout+stderr, keyID) {
			t.Errorf("%s with a bad endpoint: exit %d, shows the key ID or passed:\n%s\n%s", cmd[0], code, stdout, stderr)
		}
	}

	// A job started by other means with that endpoint fails in its
	// precheck; its history does not hold the key ID in plain text.
	job := fmt.Sprintf("keyid-%d", time.Now().UnixNano())
	in := jobInput(t, job, side{endpoint: "x/y:9000", access: keyID, secret: "not-the-secret", bucket: srcBucket}, dest2(env.MinIO2.Endpoint, dstBucket, ""))
	st, err := wait(t, start(t, in))
	if err == nil || st.State == contract.StateCompleted {
		t.Fatalf("a job with an unusable endpoint: %+v %v", st, err)
	}
	var all strings.Builder
	it := env.Client.GetWorkflowHistory(context.Background(), contract.MigrationWorkflowID(job), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		b, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	history := decodePayloads(all.String())
	if !strings.Contains(history, "x/y:9000") {
		t.Fatalf("the history does not mention the endpoint: the check would prove nothing\n%s", history)
	}
	if strings.Contains(history, keyID) {
		t.Errorf("the history shows the access key ID")
	}
}
