package s3_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// UploadFile and UploadStream store a large object by multipart upload
// (its ETag names its parts) byte for byte, and a small one in one Put.
func TestUploadByParts(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	if err := objectstore.EnsureBuckets(ctx, env.Store, "uploads"); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 13<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.IntN(256))
	}
	opts := objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: "application/json"}}
	for _, c := range []struct {
		name, key string
		data      []byte
		parts     string // the ETag's suffix: "-3" for three parts, "" for one Put
		upload    func(key string, data []byte) (objectstore.ObjectInfo, error)
	}{
		{"file", "file/big", big, "-3", func(key string, data []byte) (objectstore.ObjectInfo, error) {
			return objectstore.UploadFile(ctx, env.Store, "uploads", key, bytes.NewReader(data), int64(len(data)), opts, 5<<20)
		}},
		{"file small", "file/small", big[:1000], "", func(key string, data []byte) (objectstore.ObjectInfo, error) {
			return objectstore.UploadFile(ctx, env.Store, "uploads", key, bytes.NewReader(data), int64(len(data)), opts, 5<<20)
		}},
		{"stream", "stream/big", big, "-3", func(key string, data []byte) (objectstore.ObjectInfo, error) {
			return objectstore.UploadStream(ctx, env.Store, "uploads", key, io.MultiReader(bytes.NewReader(data)), opts, 5<<20)
		}},
		// Its end is not known before the part is full: one part, by multipart.
		{"stream of exactly one part", "stream/one", big[:5<<20], "-1", func(key string, data []byte) (objectstore.ObjectInfo, error) {
			return objectstore.UploadStream(ctx, env.Store, "uploads", key, io.MultiReader(bytes.NewReader(data)), opts, 5<<20)
		}},
		{"stream small", "stream/small", big[:1000], "", func(key string, data []byte) (objectstore.ObjectInfo, error) {
			return objectstore.UploadStream(ctx, env.Store, "uploads", key, io.MultiReader(bytes.NewReader(data)), opts, 5<<20)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := c.upload(c.key, c.data); err != nil {
				t.Fatal(err)
			}
			got, info, err := objectstore.ReadAll(ctx, env.Store, "uploads", c.key)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.data) || info.ContentType != "application/json" {
				t.Errorf("stored %d bytes as %q, uploaded %d", len(got), info.ContentType, len(c.data))
			}
			_, suffix, multipart := strings.Cut(info.ETag, "-")
			if (c.parts == "") == multipart || (multipart && "-"+suffix != c.parts) {
				t.Errorf("ETag %q, want parts %q", info.ETag, c.parts)
			}
		})
	}
}
