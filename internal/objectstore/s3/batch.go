package s3

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

var _ objectstore.BatchWriter = (*Store)(nil)

// PutBatch writes the entries as one tar archive that the store extracts
// (MinIO's "snowball" upload: one request, and MinIO writes the objects in
// parallel, instead of one request per object). Each entry's metadata
// travels in its PAX records as MinIO reads them (`minio.metadata.<header>`);
// its modification time is left to the store (the epoch means "now"), as a
// PUT's would be. The archive opens with a "./" directory entry, which the
// store skips: its first bytes are then never a key that looks like a
// compressed stream's magic number (a key starting with "BZh").
func (s *Store) PutBatch(ctx context.Context, bucket string, entries []objectstore.BatchEntry) error {
	if len(entries) == 0 {
		return nil
	}
	size := 1024
	for _, e := range entries {
		size += 1536 + len(e.Data) + len(e.Key)
	}
	var buf bytes.Buffer
	buf.Grow(size)
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("batch of %d objects: %w", len(entries), err)
	}
	for _, e := range entries {
		if !objectstore.BatchKey(e.Key) {
			return fmt.Errorf("batch: key %q would change in an archive: %w", e.Key, objectstore.ErrInvalid)
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.Key, Size: int64(len(e.Data)), Mode: 0o644, ModTime: epoch,
			Format: tar.FormatPAX, PAXRecords: paxMetadata(e.Metadata)}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("batch: %s: %w", e.Key, err)
		}
		if _, err := tw.Write(e.Data); err != nil {
			return fmt.Errorf("batch: %s: %w", e.Key, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("batch of %d objects: %w", len(entries), err)
	}
	po := minio.PutObjectOptions{DisableContentSha256: true, UserMetadata: map[string]string{"X-Amz-Meta-Snowball-Auto-Extract": "true"}}
	// Named after its first entry: a store that does not extract archives
	// keeps this one there, where the entry's own write then replaces it.
	key := entries[0].Key
	_, err := s.core.Client.PutObject(ctx, bucket, key, bytes.NewReader(buf.Bytes()), int64(buf.Len()), po)
	return s.fail("batch put", bucket, key, err)
}

// paxMetadata is an entry's metadata as the request headers MinIO reads
// from an archive's PAX records.
func paxMetadata(m objectstore.Metadata) map[string]string {
	r := map[string]string{"minio.metadata.Content-Type": orOctetStream(m.ContentType)}
	set := func(header, v string) {
		if v != "" {
			r["minio.metadata."+header] = v
		}
	}
	set("Cache-Control", m.CacheControl)
	set("Content-Encoding", m.ContentEncoding)
	set("Content-Disposition", m.ContentDisposition)
	for k, v := range m.User {
		set("X-Amz-Meta-"+k, v)
	}
	return r
}
