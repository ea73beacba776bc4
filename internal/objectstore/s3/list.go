package s3

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

func (s *Store) List(ctx context.Context, bucket string, opts objectstore.ListOptions) (objectstore.ListPage, error) {
	maxKeys := opts.MaxKeys
	if maxKeys <= 0 || maxKeys > 1000 {
		maxKeys = 1000
	}
	// ListObjectsV2 of Core takes no context; a cancelled caller waits for
	// one page at most.
	if err := ctx.Err(); err != nil {
		return objectstore.ListPage{}, s.fail("list", bucket, opts.Prefix, err)
	}
	cont, err := parseListToken(opts.ContinuationToken)
	if err != nil {
		return objectstore.ListPage{}, s.fail("list", bucket, opts.Prefix, err)
	}
	startAfter := opts.StartAfter
	if cont.storeToken == "" && cont.after != "" {
		startAfter = cont.after // a listing cut short goes on after its last entry
	}
	res, err := s.core.ListObjectsV2(bucket, opts.Prefix, startAfter, cont.storeToken, opts.Delimiter, maxKeys)
	if err != nil {
		return objectstore.ListPage{}, s.fail("list", bucket, opts.Prefix, err)
	}
	page := objectstore.ListPage{Objects: make([]objectstore.ObjectInfo, 0, len(res.Contents))}
	for _, oi := range res.Contents {
		page.Objects = append(page.Objects, objectstore.ObjectInfo{Key: oi.Key, Size: oi.Size, ETag: trimETag(oi.ETag), LastModified: oi.LastModified})
	}
	for _, p := range res.CommonPrefixes {
		page.CommonPrefixes = append(page.CommonPrefixes, p.Prefix)
	}
	after := lastEntry(page, cont.after)
	switch {
	case res.IsTruncated:
		page.NextToken = listToken{after: after, storeToken: res.NextContinuationToken}.String()
	case opts.ContinuationToken != "" && after != "":
		// The end of a continued listing is confirmed by a fresh listing
		// after its last entry: a distributed MinIO with a node stopping
		// ended one early (a page of 88 keys of 100, "not truncated"), and
		// a listing that ends early loses every key after it without a word.
		more, err := s.core.ListObjectsV2(bucket, opts.Prefix, after, "", opts.Delimiter, 1)
		if err != nil {
			return objectstore.ListPage{}, s.fail("list", bucket, opts.Prefix, err)
		}
		if len(more.Contents) > 0 || len(more.CommonPrefixes) > 0 {
			page.NextToken = listToken{after: after}.String()
		}
	}
	return page, nil
}

// listToken is the s3 store's continuation token: the store's own, and
// the listing's last entry so far, from which a listing cut short goes on
// (a token with no store token says to start a fresh listing after it).
type listToken struct {
	after      string // a key StartAfter accepts
	storeToken string
}

// listTokenPrefix marks a listToken; a token without it is a store's own
// (base64, which has no ':'), as the store returned before listTokens.
const listTokenPrefix = "ef1:"

func (t listToken) String() string {
	return listTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(t.after)) + ":" + t.storeToken
}

func parseListToken(s string) (listToken, error) {
	rest, ok := strings.CutPrefix(s, listTokenPrefix)
	if !ok {
		return listToken{storeToken: s}, nil
	}
	enc, store, ok := strings.Cut(rest, ":")
	after, err := base64.RawURLEncoding.DecodeString(enc)
	if !ok || err != nil {
		return listToken{}, fmt.Errorf("a continuation token that is not one of this store's: %w", objectstore.ErrInvalid)
	}
	return listToken{after: string(after), storeToken: store}, nil
}

// lastEntry is the StartAfter that lists what follows page: its last key,
// or past every key under its last common prefix (U+10FFFF is the largest
// character a key can hold); prev when the page is empty.
func lastEntry(page objectstore.ListPage, prev string) string {
	last := prev
	if n := len(page.Objects); n > 0 && page.Objects[n-1].Key > last {
		last = page.Objects[n-1].Key
	}
	if n := len(page.CommonPrefixes); n > 0 && page.CommonPrefixes[n-1]+"\U0010FFFF" > last {
		last = page.CommonPrefixes[n-1] + "\U0010FFFF"
	}
	return last
}
