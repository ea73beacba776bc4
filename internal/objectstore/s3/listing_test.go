package s3_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// cutListingProxy forwards to MinIO and, once, cuts a continued listing
// short: it answers the first ListObjectsV2 request that carries a
// continuation token with its first `keep` entries and "not truncated", as
// a distributed MinIO did when a node stopped while it listed (a page of 88
// keys of 100, the listing's end, and 1,112 of 2,000 keys never listed).
func cutListingProxy(t *testing.T, keep int) (endpoint string, cut *atomic.Int32) {
	t.Helper()
	target, _ := url.Parse("http://" + env.MinIO.Endpoint)
	cut = new(atomic.Int32)
	entry := regexp.MustCompile(`(?s)<Contents>.*?</Contents>|<CommonPrefixes>.*?</CommonPrefixes>`)
	forward := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		ModifyResponse: func(res *http.Response) error {
			q := res.Request.URL.Query()
			if q.Get("list-type") != "2" || q.Get("continuation-token") == "" || res.StatusCode != http.StatusOK || !cut.CompareAndSwap(0, 1) {
				return nil
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				return err
			}
			n := 0
			body = entry.ReplaceAllFunc(body, func(e []byte) []byte {
				if n++; n > keep {
					return nil
				}
				return e
			})
			body = regexp.MustCompile(`<IsTruncated>true</IsTruncated>`).ReplaceAll(body, []byte(`<IsTruncated>false</IsTruncated>`))
			body = regexp.MustCompile(`<NextContinuationToken>.*?</NextContinuationToken>`).ReplaceAll(body, nil)
			res.Body = io.NopCloser(bytes.NewReader(body))
			res.ContentLength = int64(len(body))
			res.Header.Set("Content-Length", fmt.Sprint(len(body)))
			return nil
		},
	}
	srv := httptest.NewServer(forward)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), cut
}

// A store that ends a continued listing early (a page short of its keys,
// "not truncated") is asked once more, after the last key it gave: the
// listing goes on from there, and every key is listed once.
func TestAListingCutShortIsConfirmed(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	for i, tc := range []struct {
		name      string
		keep      int
		delimiter string
	}{
		{"a page cut short", 3, ""},
		{"an empty page", 0, ""},
		{"folders", 2, "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bucket := fmt.Sprintf("cut-listing-%d", i)
			if err := env.Store.MakeBucket(ctx, bucket); err != nil {
				t.Fatal(err)
			}
			var want []string
			for i := range 40 {
				key := fmt.Sprintf("k%02d", i)
				if tc.delimiter != "" {
					key = fmt.Sprintf("f%02d/x", i)
				}
				if _, err := env.Store.Put(ctx, bucket, key, strings.NewReader("x"), 1, objectstore.PutOptions{}); err != nil {
					t.Fatal(err)
				}
				want = append(want, strings.TrimSuffix(key, "x"))
			}
			endpoint, cut := cutListingProxy(t, tc.keep)
			store, err := s3.New(s3.Config{Endpoint: endpoint, AccessKey: "testaccess", SecretKey: "testsecret123", MaxRetries: 1})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			opts := objectstore.ListOptions{MaxKeys: 10, Delimiter: tc.delimiter}
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatalf("more than 20 pages: %v", got)
				}
				page, err := store.List(ctx, bucket, opts)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range page.Objects {
					got = append(got, o.Key)
				}
				got = append(got, page.CommonPrefixes...)
				if page.NextToken == "" {
					break
				}
				opts.ContinuationToken = page.NextToken
			}
			if cut.Load() != 1 {
				t.Fatal("the proxy cut no listing short")
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("listed %d entries:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
			}
		})
	}
}
