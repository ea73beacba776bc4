package migrate_test

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/temporalproto"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/gcs"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// A job from Google Cloud Storage (fake-gcs-server, in this process on a
// free port; the worker reaches it through STORAGE_EMULATOR_HOST, as the Go
// client documents) into MinIO, through the real workflow: odd keys, every
// kind of metadata, a multipart-sized object read in ranges, a composed
// object, and one object whose bytes do not match its MD5, which becomes a
// dead letter instead of a bad copy. The service-account key sealed for the
// source appears nowhere in history or logs.
func TestGCSSourceJob(t *testing.T) {
	const bucket = "gcs_src-1"
	// An initial object keeps the MD5 it is given (later ones get computed
	// ones): bytes that do not match their MD5.
	lied := md5.Sum([]byte("the bytes that were written"))
	corrupt := fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: "data/corrupt.bin",
		Md5Hash: base64.StdEncoding.EncodeToString(lied[:])}, Content: []byte("the bytes that are stored")}
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", PublicHost: "127.0.0.1",
		InitialObjects: []fakestorage.Object{corrupt}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	t.Setenv(gcs.EmulatorEnv, strings.TrimPrefix(srv.URL(), "http://"))
	startWorker(t, 3)

	g, err := gcs.New(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	objs := append(migratetest.OddObjects(t, 7*mib+4321), migratetest.Small("small/", 40, 4096)...)
	for i := range objs {
		objs[i].Key = "data/" + objs[i].Key
	}
	migratetest.Seed(t, g, bucket, objs)
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: "other/outside-the-prefix"}, Content: []byte("x")})
	for _, part := range []string{"parts/1", "parts/2"} {
		srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: part}, Content: []byte(part + ";")})
	}
	if _, err := srv.Backend().ComposeObject(bucket, []string{"parts/1", "parts/2"}, "data/composed.txt", nil, "text/plain", "", "", "", "", "", nil); err != nil {
		t.Fatal(err)
	}
	objs = append(objs, migratetest.Object{Key: "data/composed.txt", Data: []byte("parts/1;parts/2;"), Meta: objectstore.Metadata{ContentType: "text/plain"}})

	dstBucket := migratetest.Bucket(t, env.Store2, "gcs-dst")
	job := fmt.Sprintf("gcs-%d", time.Now().UnixNano())
	// A key is sealed as the starter seals MIGRATE_SOURCE_GCS_CREDENTIALS_FILE
	// (the emulator takes no credentials, so its contents do not matter).
	const keyMarker = "fake-private-key-material-3b1f"
	key, _ := json.Marshal(map[string]string{"type": "service_account", "private_key": keyMarker})
	in := jobInput(t, job, side{bucket: bucket}, dest2(env.MinIO2.Endpoint, dstBucket, "copy/"))
	in.Source = contract.Endpoint{Secure: true, Location: migrate.Location{Bucket: bucket, Prefix: "data/", Provider: migrate.ProviderGCS}}
	if in.Source.Credentials, err = migrate.SealCredentials(keys, migrate.Credentials{GCSKey: string(key)}, job, migrate.SideSource, in.Source.Store()); err != nil {
		t.Fatal(err)
	}
	in.Verify = true
	st, err := wait(t, start(t, in))
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(objs))
	if st.State != contract.StateCompleted || st.Listed != n+1 || st.Copied != n || st.Failed != 1 || st.Verified != n || st.Mismatched != 0 {
		t.Fatalf("status %+v; want %d copied and verified, the corrupt object failed", st, n)
	}
	migratetest.CheckCopies(t, env.Store2, dstBucket, in.KeyMap(), objs)
	if _, err := env.Store2.Stat(context.Background(), dstBucket, "copy/data/corrupt.bin"); err == nil {
		t.Error("the object that failed its MD5 was written to the destination")
	}
	dead, err := jobs.GetDead(context.Background(), job, st.Execution, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].Key != "data/corrupt.bin" || !strings.Contains(dead[0].Error, "checksum mismatch") {
		t.Fatalf("dead letters %+v; want data/corrupt.bin with a checksum mismatch", dead)
	}
	h := historyText(t, contract.MigrationWorkflowID(job), contract.MigrationPageWorkflowID(job, st.Execution, 0, 0))
	if !strings.Contains(h, "credentials") {
		t.Fatal("the history has no sealed credentials at all: the check would prove nothing")
	}
	if strings.Contains(h, keyMarker) || strings.Contains(h, "service_account") {
		t.Error("the service-account key is in the workflow's history in plain text")
	}
	logs.Lock()
	leaked := strings.Contains(logs.String(), keyMarker)
	logs.Unlock()
	if leaked {
		t.Error("the service-account key is in the worker's logs")
	}
}

// historyText is the raw history of the workflows, payloads decoded.
func historyText(t *testing.T, ids ...string) string {
	t.Helper()
	var all strings.Builder
	for _, id := range ids {
		it := env.Client.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", id, err)
			}
			b, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			all.Write(b)
		}
	}
	return decodePayloads(all.String())
}
