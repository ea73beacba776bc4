package migrate_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rcloneBinary is Debian's rclone (`make bench` installs it), or "" when
// it is not installed: the benchmarks then leave out the rclone rows.
func rcloneBinary(b testing.TB) string {
	p, err := exec.LookPath("rclone")
	if err != nil {
		b.Logf("no rclone on PATH (make bench installs Debian's): the rclone rows are left out")
		return ""
	}
	return p
}

// rcloneCopy is `rclone copy -M` (metadata kept) from the source MinIO to
// the destination one, `transfers` objects at a time (and as many
// checkers), the remotes given by environment variables, not a config
// file.
func rcloneCopy(b testing.TB, rclone, srcBucket, dstBucket string, transfers int) {
	config := filepath.Join(b.TempDir(), "rclone.conf")
	if err := os.WriteFile(config, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(rclone, "copy", "-M", "--config", config,
		"--transfers", strconv.Itoa(transfers), "--checkers", strconv.Itoa(transfers),
		"src:"+srcBucket, "dst:"+dstBucket)
	// Without the AWS_ variables of the machine: rclone's AWS SDK would
	// take an AWS_CA_BUNDLE (or credentials) meant for others.
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "RCLONE_") {
			base = append(base, kv)
		}
	}
	cmd.Env = append(base,
		"RCLONE_CONFIG_SRC_TYPE=s3", "RCLONE_CONFIG_SRC_PROVIDER=Minio", "RCLONE_CONFIG_SRC_ENDPOINT=http://"+env.MinIO.Endpoint,
		"RCLONE_CONFIG_SRC_ACCESS_KEY_ID="+env.MinIO.AccessKey, "RCLONE_CONFIG_SRC_SECRET_ACCESS_KEY="+env.MinIO.SecretKey,
		"RCLONE_CONFIG_DST_TYPE=s3", "RCLONE_CONFIG_DST_PROVIDER=Minio", "RCLONE_CONFIG_DST_ENDPOINT=http://"+env.MinIO2.Endpoint,
		"RCLONE_CONFIG_DST_ACCESS_KEY_ID="+env.MinIO2.AccessKey, "RCLONE_CONFIG_DST_SECRET_ACCESS_KEY="+env.MinIO2.SecretKey)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("rclone copy: %v\n%s", err, out)
	}
}
