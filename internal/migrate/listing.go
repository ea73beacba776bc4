package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// Listed is one page of a source listing.
type Listed struct {
	Objects []Object
	Bytes   int64
	// Next is the token of the next page; Last says there is none.
	Next string
	Last bool
}

// MaxListKeys is the most keys S3 returns for one listing request.
const MaxListKeys = 1000

// FirstPageSize is the size of a listing's first page; each page after it
// is four times the one before, up to the job's page size (see
// RampedPageSize).
const FirstPageSize = 250

// RampedPageSize is how many objects page seq of a listing holds when
// pages are at most size objects: FirstPageSize, growing fourfold from page
// to page up to size (250, 1,000, then 2,000 at the default size). The
// first copies then start after one short listing instead of a full page (a
// store reads each listed object's metadata, so listing 2,000 keys takes
// hundreds of milliseconds), and listing the next page (about a fifth of a
// millisecond per key) takes less time than copying this one (milliseconds
// per object), so transfers never wait for it. Few pages are added: each
// costs a child workflow.
func RampedPageSize(seq, size int) int {
	ramped := FirstPageSize
	for range seq {
		if ramped >= size {
			break
		}
		ramped *= 4
	}
	return min(ramped, size)
}

// ListSource lists one page of at most max objects under loc, continuing
// from token (a continuation token of the store), within the key range r.
// A page larger than one listing request is listed in several.
func ListSource(ctx context.Context, s objectstore.Store, loc Location, r KeyRange, token string, max int) (Listed, error) {
	var out Listed
	opts := objectstore.ListOptions{Prefix: loc.Prefix, ContinuationToken: token}
	if token == "" && r.After > loc.Prefix {
		opts.StartAfter = r.After
	}
	for {
		opts.MaxKeys = min(MaxListKeys, max-len(out.Objects))
		page, err := s.List(ctx, loc.Bucket, opts)
		if err != nil {
			return Listed{}, err
		}
		for _, o := range page.Objects {
			if r.Until != "" && o.Key > r.Until {
				out.Last, out.Next = true, ""
				return out, nil
			}
			if !r.Contains(o.Key) {
				continue
			}
			out.Objects = append(out.Objects, objectOf(o))
			out.Bytes += o.Size
		}
		out.Next, out.Last = page.NextToken, page.NextToken == ""
		if out.Last || len(out.Objects) >= max {
			return out, nil
		}
		opts.ContinuationToken, opts.StartAfter = page.NextToken, ""
	}
}

// ListKeyList reads one page of at most max keys of an uploaded key list,
// from token (a byte offset). The keys have no sizes yet (Size -1).
func ListKeyList(ctx context.Context, jobs JobStore, key, token string, max int) (Listed, error) {
	off, err := KeyListOffset(token)
	if err != nil {
		return Listed{}, err
	}
	rr, ok := jobs.Store.(objectstore.RangeReader)
	if !ok {
		return Listed{}, fmt.Errorf("key list %s: range reads: %w", key, objectstore.ErrNotSupported)
	}
	want := MaxKeyListChunk(max)
	body, info, err := rr.GetRange(ctx, jobs.Bucket, key, off, want)
	if errors.Is(err, objectstore.ErrInvalid) && off > 0 {
		return Listed{Last: true}, nil // the offset is the end of the list
	}
	if err != nil {
		return Listed{}, fmt.Errorf("key list: %w", err)
	}
	defer body.Close()
	chunk, err := io.ReadAll(body)
	if err != nil {
		return Listed{}, fmt.Errorf("key list %s: %w", key, err)
	}
	keys, next := KeyListPage(chunk, off, off+int64(len(chunk)) >= info.Size, max)
	out := Listed{Next: next, Last: next == ""}
	for _, k := range keys {
		out.Objects = append(out.Objects, Object{Key: k, Size: -1})
	}
	return out, nil
}
