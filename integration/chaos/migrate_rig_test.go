//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// migrateRig is what every migrate suite starts with: a codec key, the job
// store and two supervised migrate workers sharing them.
type migrateRig struct {
	keys    *keyring.Keyring
	jobs    migrate.JobStore
	workers []*proc
}

// startMigrateRig generates the key named name, ensures the job store's
// bucket and starts two migrate workers named name-0 and name-1.
func startMigrateRig(t *testing.T, name, jobsBucket string) migrateRig {
	t.Helper()
	key, keys := newKey(t, name)
	rig := migrateRig{keys: keys, jobs: migrate.JobStore{Store: env.primaryStore, Bucket: jobsBucket}}
	if err := rig.jobs.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	workerEnv := []string{"TEMPORAL_ADDRESS=" + env.temporal.HostPort, "CODEC_KEYS=" + key.Encode(), "LOG_FORMAT=json", "HEALTH_ADDR=127.0.0.1:0",
		"S3_ENDPOINT=" + env.primary.Endpoint, "S3_ACCESS_KEY=" + env.primary.AccessKey, "S3_SECRET_KEY=" + env.primary.SecretKey,
		"BUCKET_MIGRATE=" + rig.jobs.Bucket, "MAX_ACTIVITIES=16"}
	for i := range 2 {
		rig.workers = append(rig.workers, supervise(t, fmt.Sprintf("%s-%d", name, i), env.bins["migrate"], workerEnv))
	}
	return rig
}

// startMigration starts in's job the way the starter does, findable by its
// job and buckets.
func startMigration(ctx context.Context, t *testing.T, in contract.JobInput) client.WorkflowRun {
	t.Helper()
	run, err := env.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: contract.MigrationWorkflowID(in.Job), TaskQueue: contract.TaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(contract.JobKey.ValueSet(in.Job),
			contract.SourceBucketKey.ValueSet(in.Source.Location.Bucket), contract.DestBucketKey.ValueSet(in.Dest.Location.Bucket)),
	}, contract.WorkflowTypeMigration, in)
	if err != nil {
		t.Fatal(err)
	}
	return run
}
