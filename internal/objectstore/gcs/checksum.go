package gcs

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"
)

// ErrChecksum: the bytes read do not have the checksum GCS keeps for the
// object. It is an error of the object, not of the store: retrying reads the
// same bytes.
var ErrChecksum = errors.New("checksum mismatch")

// checked verifies a whole object's bytes as they are read: the MD5 when GCS
// has one, else the CRC32C (composite objects have only that). At the end
// of the bytes, a mismatch is returned instead of io.EOF, so whoever streams
// the object on (a destination upload) fails instead of completing.
type checked struct {
	r           io.ReadCloser
	h           hash.Hash
	want        []byte
	name        string
	bucket, key string
	n, size     int64
	verified    bool // the whole object was read and its checksum compared
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newChecked(r io.ReadCloser, a *storage.ObjectAttrs, bucket, key string) io.ReadCloser {
	c := &checked{r: r, bucket: bucket, key: key, size: a.Size}
	switch {
	case len(a.MD5) > 0:
		c.h, c.want, c.name = md5.New(), a.MD5, "MD5"
	default:
		// GCS keeps a CRC32C of every object.
		c.h, c.name = crc32.New(castagnoli), "CRC32C"
		c.want = binary.BigEndian.AppendUint32(nil, a.CRC32C)
	}
	return c
}

func (c *checked) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	// Checked on the read that completes the object, not only at io.EOF,
	// and a mismatch withholds that read's bytes: an upload of a known size
	// stops at its last byte (io.ReadFull even drops an error that comes
	// with a full buffer), so it must never get the whole object.
	if err == io.EOF || (err == nil && c.n >= c.size && !c.verified) {
		c.verified = true
		if got := c.h.Sum(nil); c.n != c.size || !bytes.Equal(got, c.want) {
			return 0, fmt.Errorf("read %s/%s: %w: %d bytes with %s %s; Google Cloud Storage has %d bytes with %s %s",
				c.bucket, c.key, ErrChecksum, c.n, c.name, hex.EncodeToString(got), c.size, c.name, hex.EncodeToString(c.want))
		}
	}
	return n, err
}

func (c *checked) Close() error { return c.r.Close() }

// CredentialsType checks that a credentials JSON file is a service-account
// key, the one type a job accepts: other types (external accounts) make the
// worker fetch tokens from URLs the file names. Errors never quote the file.
func CredentialsType(credentialsJSON []byte) (option.CredentialsType, error) {
	var f struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(credentialsJSON, &f); err != nil {
		return "", errors.New("google cloud storage credentials: not a JSON credentials file")
	}
	switch t := option.CredentialsType(f.Type); t {
	case option.ServiceAccount:
		return t, nil
	case "":
		return "", errors.New(`google cloud storage credentials: the JSON has no "type" (want a service-account key file)`)
	default:
		return "", fmt.Errorf("google cloud storage credentials: type %q is not supported (want %q)", f.Type, option.ServiceAccount)
	}
}
