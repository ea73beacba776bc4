package jobclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// fakeDNS answers from a table and counts the questions.
type fakeDNS struct {
	mu     sync.Mutex
	answer map[string][]string
	asked  map[string]int
}

func (d *fakeDNS) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.asked == nil {
		d.asked = map[string]int{}
	}
	d.asked[host]++
	var out []netip.Addr
	for _, a := range d.answer[host] {
		out = append(out, netip.MustParseAddr(a))
	}
	if len(out) == 0 {
		return nil, errors.New("no such host")
	}
	return out, nil
}

// Jobs started over the API reach only what the operator allows: the
// configured store and MIGRATE_ALLOWED_ENDPOINTS' patterns; never the
// metadata service, loopback, private or in-cluster names through a
// wildcard; and a refusal names no address.
func TestAllowedEndpoints(t *testing.T) {
	dns := &fakeDNS{answer: map[string][]string{
		"acct.r2.cloudflarestorage.com":   {"104.18.0.10"},
		"evil.r2.cloudflarestorage.com":   {"10.0.0.8"},
		"mixed.r2.cloudflarestorage.com":  {"104.18.0.11", "127.0.0.1"},
		"meta.r2.cloudflarestorage.com":   {"169.254.169.254"},
		"v6.r2.cloudflarestorage.com":     {"fd00::1"},
		"s3.eu-west-1.amazonaws.com":      {"52.95.0.1"},
		"minio.internal":                  {"10.1.2.3"},
		"redis-anywhere":                  {"10.9.9.9"},
		"temporal-frontend":               {"10.9.9.10"},
		"ranged.r2.cloudflarestorage.com": {"10.20.3.4"},
	}}
	p, err := ParseEndpointPolicy("*.r2.cloudflarestorage.com, s3.*.amazonaws.com,minio.internal:9000,10.20.0.0/16", "", "127.0.0.1:9000")
	if err != nil {
		t.Fatal(err)
	}
	p.Lookup = dns.lookup
	for _, c := range []struct {
		endpoint string
		secure   bool
		pins     string // "": refused
	}{
		{"127.0.0.1:9000", false, "127.0.0.1"}, // the configured store
		{"[::ffff:127.0.0.1]:9000", false, "127.0.0.1"},
		{"127.0.0.1:7233", false, ""}, // Temporal's frontend on the same host
		{"169.254.169.254:80", false, ""},
		{"169.254.169.254", false, ""},
		{"[fe80::1]:80", false, ""},
		{"[::1]:9000", false, ""},
		{"0.0.0.0:9000", false, ""},
		{"10.1.2.3:9000", false, ""},
		{"10.20.9.9:9000", false, "10.20.9.9"}, // in the allowed range
		{"redis-anywhere:6379", false, ""},
		{"temporal-frontend:7233", false, ""},
		{"acct.r2.cloudflarestorage.com", true, "104.18.0.10"},
		{"ACCT.r2.cloudflarestorage.com.:443", true, "104.18.0.10"},
		{"evil.r2.cloudflarestorage.com", true, ""},
		{"mixed.r2.cloudflarestorage.com", true, ""},
		{"meta.r2.cloudflarestorage.com", true, ""},
		{"v6.r2.cloudflarestorage.com", true, ""},
		{"ranged.r2.cloudflarestorage.com", true, "10.20.3.4"},
		{"nothere.r2.cloudflarestorage.com", true, ""},
		{"a.b.r2.cloudflarestorage.com", true, ""}, // "*" is one label
		{"s3.eu-west-1.amazonaws.com", true, "52.95.0.1"},
		{"s3.amazonaws.com", true, ""},
		{"minio.internal:9000", false, "10.1.2.3"}, // named exactly: its private address is meant
		{"minio.internal:9001", false, ""},
		{"metadata.google.internal", false, ""},
	} {
		pins, err := p.Pin(context.Background(), "destEndpoint", c.endpoint, c.secure)
		got := strings.Join(pins, ",")
		if c.pins == "" {
			var na *NotAllowedError
			if !errors.As(err, &na) {
				t.Errorf("%s: pinned %q, %v; want it refused", c.endpoint, got, err)
				continue
			}
			// The same words whatever the reason: nothing about what it
			// resolves to. The reason is for the operator's log.
			want := (&NotAllowedError{Option: "destEndpoint", Endpoint: c.endpoint}).Error()
			if msg := err.Error(); msg != want || !strings.Contains(msg, "endpoint not allowed") || na.Detail == "" {
				t.Errorf("%s: refused with %q (detail %q); want %q", c.endpoint, msg, na.Detail, want)
			}
			continue
		}
		if err != nil || got != c.pins {
			t.Errorf("%s: pinned %q, %v; want %s", c.endpoint, got, err, c.pins)
		}
	}
	// A name no entry allows is never looked up.
	for _, h := range []string{"redis-anywhere", "temporal-frontend", "metadata.google.internal"} {
		if dns.asked[h] > 0 {
			t.Errorf("%s was looked up", h)
		}
	}
	for _, bad := range []string{"*", "minio.internal:port", "10.0.0.0/40", "ex ample.com", "a..b"} {
		if _, err := ParseEndpointPolicy(bad, ""); err == nil || !strings.Contains(err.Error(), EnvAllowedEndpoints) {
			t.Errorf("pattern %q: %v, want an error naming %s", bad, err, EnvAllowedEndpoints)
		}
	}
	// By default only the configured store.
	none, _ := ParseEndpointPolicy("", "", "127.0.0.1:9000")
	none.Lookup = dns.lookup
	if _, err := none.Pin(context.Background(), "sourceEndpoint", "acct.r2.cloudflarestorage.com", true); err == nil {
		t.Error("with no allowed endpoints, R2 was allowed")
	}
}

// The pin holds: the name is resolved once, when the job is checked, and
// the store then dials exactly the checked address, whatever the name
// resolves to later (here: nothing at all, and another address), keeping
// the name in the Host header; any other host or port is refused.
func TestPinnedStoreDialsTheCheckedAddress(t *testing.T) {
	var mu sync.Mutex
	var hosts, paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts, paths = append(hosts, r.Host), append(paths, r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	// store.test is reserved (RFC 6761): no real resolver answers for it.
	endpoint := "store.test:" + port
	dns := &fakeDNS{answer: map[string][]string{"store.test": {"127.0.0.1"}}}
	p, err := ParseEndpointPolicy("store.test", "")
	if err != nil {
		t.Fatal(err)
	}
	p.Lookup = dns.lookup
	in := contract.JobInput{Source: contract.Endpoint{Endpoint: endpoint, Location: migrate.Location{Bucket: "src"}},
		Dest: contract.Endpoint{Endpoint: endpoint, Location: migrate.Location{Bucket: "dst"}}}
	if problems := p.PinInput(context.Background(), &in, false, JSONName); len(problems) > 0 {
		t.Fatal(problems)
	}
	if strings.Join(in.Source.Pinned, ",") != "127.0.0.1" || strings.Join(in.Dest.Pinned, ",") != "127.0.0.1" {
		t.Fatalf("pinned %v and %v", in.Source.Pinned, in.Dest.Pinned)
	}
	// Rebinding: the name now points elsewhere; the job must not follow.
	dns.answer["store.test"] = []string{"192.0.2.66"}
	asked := dns.asked["store.test"]
	store, err := s3.New(s3.Config{Endpoint: endpoint, AccessKey: "a", SecretKey: "s", Region: "us-east-1", MaxRetries: 1, Pinned: in.Source.Pinned})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Stat(context.Background(), "src", "a/key.txt"); err == nil {
		t.Fatal("stat of a missing object succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hosts) == 0 || hosts[0] != endpoint || paths[0] != "/src/a/key.txt" {
		t.Fatalf("the checked address got %v %v; want a path-style request with Host %s", hosts, paths, endpoint)
	}
	if dns.asked["store.test"] != asked {
		t.Fatal("the store resolved the name again")
	}
	dial, err := s3.PinnedDialer(endpoint, false, in.Source.Pinned)
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{"other.test:" + port, "store.test:1", "bucket.store.test:" + port} {
		if c, err := dial(context.Background(), "tcp", other); err == nil {
			c.Close()
			t.Errorf("dialled %s through the pin of %s", other, endpoint)
		}
	}
}

// Over the API a gs:// source is read with a sealed service-account key,
// or with the workers' own identity only for a bucket the operator lists.
func TestGCSSourceNeedsAKeyOrAnAllowedBucket(t *testing.T) {
	p, err := ParseEndpointPolicy("", "public-assets", "127.0.0.1:9000")
	if err != nil {
		t.Fatal(err)
	}
	in := func(bucket string) *contract.JobInput {
		return &contract.JobInput{Source: contract.Endpoint{Secure: true, Location: migrate.Location{Bucket: bucket, Provider: migrate.ProviderGCS}},
			Dest: contract.Endpoint{Endpoint: "127.0.0.1:9000", Location: migrate.Location{Bucket: "dst"}}}
	}
	problems := p.PinInput(context.Background(), in("private-assets"), false, JSONName)
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), EnvGCSADCBuckets) || !strings.Contains(problems[0].Error(), migrate.EnvSourceGCSKey) {
		t.Fatalf("gs://private-assets without a key: %v", problems)
	}
	if problems := p.PinInput(context.Background(), in("private-assets"), true, JSONName); len(problems) > 0 {
		t.Fatalf("with a sealed key: %v", problems)
	}
	if problems := p.PinInput(context.Background(), in("public-assets"), false, JSONName); len(problems) > 0 {
		t.Fatalf("an allowed bucket: %v", problems)
	}
	if _, err := ParseEndpointPolicy("", "Bad_Bucket!"); err == nil || !strings.Contains(err.Error(), EnvGCSADCBuckets) {
		t.Fatalf("a bad bucket name: %v", err)
	}
}
