package registrytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// feed is the registry's changes feed, as npm's replication API serves it
// (CouchDB's _changes): every publish is a change with the next sequence
// number; `since` restarts from a sequence ("now": from the latest);
// feed=longpoll waits up to timeout (ms) for the first change after since;
// feed=continuous writes one line per change then {"last_seq":N}; limit
// bounds the answer.
type feed struct {
	mu      sync.Mutex
	log     []feedChange
	next    chan struct{} // closed and replaced at every change
	stalled chan struct{} // set: requests hang until it is closed
	refuse  int           // set: requests get this status
	polls   int
}

type feedChange struct {
	Seq     int64               `json:"seq"`
	ID      string              `json:"id"`
	Changes []map[string]string `json:"changes"`
}

func (d *feed) init() { d.next = make(chan struct{}) }

// changed appends a change of package name with the next sequence.
func (d *feed) changed(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	seq := int64(len(d.log) + 1)
	d.log = append(d.log, feedChange{Seq: seq, ID: name, Changes: []map[string]string{{"rev": fmt.Sprintf("%d-%x", seq, seq*2654435761)}}})
	close(d.next)
	d.next = make(chan struct{})
}

// StallFeed makes the changes feed hang (accept requests, never answer)
// until the returned function is called.
func (f *Registry) StallFeed() (resume func()) {
	f.feed.mu.Lock()
	defer f.feed.mu.Unlock()
	stalled := make(chan struct{})
	f.feed.stalled = stalled
	var once sync.Once
	return func() {
		once.Do(func() {
			f.feed.mu.Lock()
			defer f.feed.mu.Unlock()
			close(stalled)
			if f.feed.stalled == stalled {
				f.feed.stalled = nil
			}
		})
	}
}

// RefuseFeed makes the changes feed answer status (0: serve again).
func (f *Registry) RefuseFeed(status int) {
	f.feed.mu.Lock()
	defer f.feed.mu.Unlock()
	f.feed.refuse = status
}

// FeedPolls counts the requests to the changes feed.
func (f *Registry) FeedPolls() int {
	f.feed.mu.Lock()
	defer f.feed.mu.Unlock()
	return f.feed.polls
}

// LastSeq is the feed's latest sequence (0 before the first publish).
func (f *Registry) LastSeq() int64 {
	f.feed.mu.Lock()
	defer f.feed.mu.Unlock()
	return int64(len(f.feed.log))
}

func (d *feed) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d.mu.Lock()
	d.polls++
	stalled, refuse := d.stalled, d.refuse
	d.mu.Unlock()
	if refuse != 0 {
		http.Error(w, `{"error":"refused","reason":"the test refuses the feed"}`, refuse)
		return
	}
	if stalled != nil {
		select {
		case <-stalled:
		case <-r.Context().Done():
			return
		}
	}
	since, err := d.since(q.Get("since"))
	if err != nil {
		http.Error(w, `{"error":"bad_request","reason":"`+err.Error()+`"}`, http.StatusBadRequest)
		return
	}
	limit := 1000
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			http.Error(w, `{"error":"bad_request","reason":"limit: a positive number"}`, http.StatusBadRequest)
			return
		}
	}
	timeout := time.Minute
	if v := q.Get("timeout"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			http.Error(w, `{"error":"bad_request","reason":"timeout: milliseconds"}`, http.StatusBadRequest)
			return
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	mode := q.Get("feed")
	if mode == "continuous" {
		d.continuous(w, r, since, limit, timeout)
		return
	}
	results, last, next := d.after(since, limit)
	if len(results) == 0 && mode == "longpoll" {
		select {
		case <-next:
			results, last, _ = d.after(since, limit)
		case <-time.After(timeout):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"results": nonNil(results), "last_seq": last})
}

// info answers the database's information: its latest sequence.
func (d *feed) info(w http.ResponseWriter) {
	d.mu.Lock()
	seq := int64(len(d.log))
	d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"db_name": "registry", "update_seq": seq})
}

// since reads the since parameter: a sequence, "now", or none (0).
func (d *feed) since(v string) (int64, error) {
	switch v {
	case "", "0":
		return 0, nil
	case "now":
		d.mu.Lock()
		defer d.mu.Unlock()
		return int64(len(d.log)), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("since: a sequence number or now, not %q", v)
	}
	return n, nil
}

// after returns at most limit changes after since, the sequence to go on
// from, and the channel closed at the next change.
func (d *feed) after(since int64, limit int) ([]feedChange, int64, chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	from := min(since, int64(len(d.log)))
	results := d.log[from:min(from+int64(limit), int64(len(d.log)))]
	last := from
	if len(results) > 0 {
		last = results[len(results)-1].Seq
	}
	return append([]feedChange(nil), results...), last, d.next
}

// continuous writes each change as a line as it comes, until limit
// changes or timeout without one, then {"last_seq":N}.
func (d *feed) continuous(w http.ResponseWriter, r *http.Request, since int64, limit int, timeout time.Duration) {
	w.Header().Set("Content-Type", "application/json")
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	sent := 0
	for sent < limit {
		results, last, next := d.after(since, limit-sent)
		for _, c := range results {
			_ = enc.Encode(c)
		}
		sent += len(results)
		since = last
		if flusher != nil {
			flusher.Flush()
		}
		if sent >= limit {
			break
		}
		select {
		case <-next:
			continue
		case <-time.After(timeout):
		case <-r.Context().Done():
			return
		}
		break
	}
	_ = enc.Encode(map[string]int64{"last_seq": since})
}

func nonNil(c []feedChange) []feedChange {
	if c == nil {
		return []feedChange{}
	}
	return c
}
