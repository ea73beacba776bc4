package migrate

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
)

// JobStoreConfig says where the job store is: a bucket on the engine's
// own store (the S3_* settings every worker has), never on a job's sides.
type JobStoreConfig struct {
	S3     s3.Config
	Bucket string
}

// RegisterFlags adds the job store's flags, defaulting from S3_* and
// BUCKET_MIGRATE; the secret comes from S3_SECRET_KEY only.
//
// TLS has one polarity, as the starter's --source-insecure: --s3-insecure
// (the old --s3-secure still works, hidden).
func (c *JobStoreConfig) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.S3.Endpoint, "s3-endpoint", config.Env("S3_ENDPOINT", "127.0.0.1:9000"), "the job store's S3 endpoint host:port (env S3_ENDPOINT)")
	c.S3.Secure = config.EnvBool("S3_SECURE", false)
	config.InsecureFlag(fs, &c.S3.Secure, "s3-insecure", "s3-secure", "plain HTTP to the job store; =false for https (default: the opposite of env S3_SECURE)")
	fs.StringVar(&c.S3.Region, "s3-region", config.Env("S3_REGION", ""), "the job store's region (env S3_REGION)")
	fs.StringVar(&c.Bucket, "bucket-migrate", config.Env("BUCKET_MIGRATE", DefaultJobBucket), "bucket of the job store: pages, reports, dead letters (env BUCKET_MIGRATE)")
	c.S3.AccessKey = config.Env("S3_ACCESS_KEY", "edgeflow")
	c.S3.SecretKey = config.Env("S3_SECRET_KEY", "edgeflow-dev-secret")
}

// Open connects to the job store (lazily: no request is made).
func (c JobStoreConfig) Open() (JobStore, error) {
	s, err := s3.New(c.S3)
	if err != nil {
		return JobStore{}, err
	}
	return JobStore{Store: s, Bucket: c.Bucket}, nil
}

// Ensure creates the job store's bucket if it does not exist.
func (s JobStore) Ensure(ctx context.Context) error {
	return objectstore.EnsureBuckets(ctx, s.Store, s.Bucket)
}
