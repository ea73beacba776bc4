package edge

import (
	"net/http"
	"testing"
	"time"
)

// headerOnlyWriter is a ResponseWriter that keeps nothing but its headers
// and takes write deadlines, as net/http's does.
type headerOnlyWriter struct{ h http.Header }

func (w *headerOnlyWriter) Header() http.Header              { return w.h }
func (w *headerOnlyWriter) Write(p []byte) (int, error)      { return len(p), nil }
func (w *headerOnlyWriter) WriteHeader(int)                  {}
func (w *headerOnlyWriter) SetWriteDeadline(time.Time) error { return nil }

// A request for a hot file (its package document, headers and body
// cached) allocates little in the edge: the header map net/http hands every
// request (made here) and its growth to 13 headers (4); the headers
// themselves are built once per file, not per request (the code before
// servedFile made 31 to 33 in all), and a file request does not go through
// the mux's routing (3 more before).
func TestHotFileAllocations(t *testing.T) {
	s, ts, _ := newTestEdge(t, nil)
	for _, ae := range []string{"", "br", "gzip"} {
		url := fileURL(ts.URL, testVersion, "data/info.json")
		if resp := get(t, url, map[string]string{"Accept-Encoding": ae}); resp.StatusCode != 200 {
			t.Fatalf("warming: %d", resp.StatusCode)
		}
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ae != "" {
			req.Header.Set("Accept-Encoding", ae)
		}
		w := &headerOnlyWriter{}
		allocs := testing.AllocsPerRun(200, func() {
			w.h = make(http.Header)
			s.ServeHTTP(w, req)
		})
		t.Logf("Accept-Encoding %q: %.1f allocations", ae, allocs)
		if allocs > maxHotFileAllocs {
			t.Errorf("Accept-Encoding %q: %.1f allocations per request, want at most %d", ae, allocs, maxHotFileAllocs)
		}
	}
}

// maxHotFileAllocs is 5 measured on Go 1.26, with a margin of one for the
// runtime's map.
const maxHotFileAllocs = 6
