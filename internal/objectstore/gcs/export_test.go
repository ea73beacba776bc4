package gcs

import (
	"crypto/md5"
	"hash/crc32"
	"io"

	"cloud.google.com/go/storage"
)

// NewCheckedForTest verifies r against the checksum GCS would keep for want:
// its MD5 (withMD5), else its CRC32C only, as for a composite object.
func NewCheckedForTest(r io.Reader, want []byte, withMD5 bool) io.ReadCloser {
	a := &storage.ObjectAttrs{Size: int64(len(want)), CRC32C: crc32.Checksum(want, castagnoli)}
	if withMD5 {
		sum := md5.Sum(want)
		a.MD5 = sum[:]
	}
	return newChecked(io.NopCloser(r), a, "bucket", "key")
}
