package s3

import (
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// ---- conversions ---------------------------------------------------------

func putOptions(m objectstore.Metadata) minio.PutObjectOptions {
	// Small objects dominate; MD5/SHA256 content hashing of every body is
	// wasted CPU on top of TLS/HTTP integrity, and Publish verifies SRI itself.
	return minio.PutObjectOptions{
		ContentType: orOctetStream(m.ContentType), CacheControl: m.CacheControl,
		ContentEncoding: m.ContentEncoding, ContentDisposition: m.ContentDisposition,
		UserMetadata: m.User, DisableContentSha256: true,
	}
}

func metadataOf(po minio.PutObjectOptions) objectstore.Metadata {
	m := objectstore.Metadata{ContentType: po.ContentType, CacheControl: po.CacheControl,
		ContentEncoding: po.ContentEncoding, ContentDisposition: po.ContentDisposition}
	if len(po.UserMetadata) > 0 {
		m.User = make(map[string]string, len(po.UserMetadata))
		for k, v := range po.UserMetadata {
			m.User[strings.ToLower(k)] = v
		}
	}
	return m
}

func orOctetStream(contentType string) string {
	if contentType == "" {
		return "application/octet-stream"
	}
	return contentType
}

func toInfo(oi minio.ObjectInfo) objectstore.ObjectInfo {
	info := objectstore.ObjectInfo{Key: oi.Key, Size: oi.Size, ETag: trimETag(oi.ETag), LastModified: oi.LastModified,
		Metadata: objectstore.Metadata{ContentType: oi.ContentType, ContentEncoding: oi.ContentEncoding,
			CacheControl: oi.Metadata.Get("Cache-Control"), ContentDisposition: oi.Metadata.Get("Content-Disposition")}}
	if len(oi.UserMetadata) > 0 {
		info.User = make(map[string]string, len(oi.UserMetadata))
		for k, v := range oi.UserMetadata {
			info.User[strings.ToLower(k)] = v
		}
	}
	return info
}

func trimETag(etag string) string { return strings.Trim(etag, `"`) }

// rangeTotal reads the object size from "bytes 0-99/1234".
func rangeTotal(contentRange string) (int64, bool) {
	_, total, ok := strings.Cut(contentRange, "/")
	if !ok || total == "*" {
		return 0, false
	}
	n, err := strconv.ParseInt(total, 10, 64)
	return n, err == nil
}
