package registry_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

func seqs(p *registry.ChangesPage) (out []string) {
	for _, c := range p.Results {
		out = append(out, c.Seq+":"+c.ID)
	}
	return out
}

// The local registry's feed numbers every publish, answers from any
// sequence with last_seq, and bounds an answer by limit, as npm's does.
func TestChangesFeedSequencesRestartAndLimit(t *testing.T) {
	npm := registrytest.New()
	defer npm.Close()
	for _, name := range []string{"a", "b", "a"} {
		npm.Add(name, "1.0."+name, nil)
	}
	feed := &registry.Changes{URL: npm.URL + "/registry/_changes"}
	ctx := context.Background()
	page, err := feed.Poll(ctx, "0", time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seqs(page), " "); got != "1:a 2:b 3:a" || page.LastSeq != "3" {
		t.Fatalf("from 0: %s, last %s", got, page.LastSeq)
	}
	if page, err = feed.Poll(ctx, "2", time.Second, 0); err != nil || strings.Join(seqs(page), " ") != "3:a" || page.LastSeq != "3" {
		t.Fatalf("from 2: %v %v", page, err)
	}
	if page, err = feed.Poll(ctx, "0", time.Second, 2); err != nil || strings.Join(seqs(page), " ") != "1:a 2:b" || page.LastSeq != "2" {
		t.Fatalf("from 0, limit 2: %v %v", page, err)
	}
}

// A long-poll from the latest sequence waits for the next publish and
// answers with it; with nothing published it answers empty at its timeout.
func TestChangesLongPollWaitsForTheNextChange(t *testing.T) {
	npm := registrytest.New()
	defer npm.Close()
	npm.Add("old", "1.0.0", nil)
	feed := &registry.Changes{URL: npm.URL + "/_changes"}
	empty, err := feed.Poll(context.Background(), "1", time.Millisecond, 0)
	if err != nil || len(empty.Results) != 0 || empty.LastSeq != "1" {
		t.Fatalf("nothing new: %+v %v", empty, err)
	}
	got := make(chan *registry.ChangesPage, 1)
	go func() {
		page, err := feed.Poll(context.Background(), "now", time.Minute, 0)
		if err != nil {
			t.Error(err)
		}
		got <- page
	}()
	testenv.Eventually(t, 10*time.Second, 10*time.Millisecond, "the long-poll is waiting", func() (bool, string) {
		return npm.FeedPolls() == 2, ""
	})
	npm.Add("new", "2.0.0", nil)
	page := <-got
	if page == nil || strings.Join(seqs(page), " ") != "2:new" || page.LastSeq != "2" {
		t.Fatalf("long-poll: %+v", page)
	}
}

// A feed that hangs is "stalled" once its wait and the stall bound have
// passed; one that refuses says its status.
func TestChangesStalledOrRefusedFeedIsAnError(t *testing.T) {
	npm := registrytest.New()
	defer npm.Close()
	resume := npm.StallFeed()
	defer resume()
	feed := &registry.Changes{URL: npm.URL + "/_changes", Stall: 50 * time.Millisecond}
	if _, err := feed.Poll(context.Background(), "0", time.Millisecond, 0); err == nil || !strings.Contains(err.Error(), "stalled") {
		t.Fatalf("stalled feed: %v", err)
	}
	resume()
	npm.RefuseFeed(http.StatusServiceUnavailable)
	if _, err := feed.Poll(context.Background(), "0", time.Millisecond, 0); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("refused feed: %v", err)
	}
	npm.RefuseFeed(0)
	if _, err := feed.Poll(context.Background(), "0", time.Millisecond, 0); err != nil {
		t.Fatalf("feed served again: %v", err)
	}
}

// Continuous mode writes one line per change, then last_seq.
func TestChangesContinuousFeed(t *testing.T) {
	npm := registrytest.New()
	defer npm.Close()
	npm.Add("a", "1.0.0", nil)
	npm.Add("b", "1.0.0", nil)
	resp, err := http.Get(npm.URL + "/_changes?feed=continuous&since=0&limit=2")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 || lines[0]["id"] != "a" || lines[1]["id"] != "b" || lines[2]["last_seq"] != float64(2) {
		t.Fatalf("continuous: %v", lines)
	}
}

// A follower's first poll starts at the database's update_seq (what came
// before is the Schedule's), or at CouchDB's "now" where that is not
// served.
func TestChangesFirstPollStartsAtTheLatestSequence(t *testing.T) {
	npm := registrytest.New()
	defer npm.Close()
	npm.Add("old", "1.0.0", nil)
	npm.Add("older", "1.0.0", nil)
	page, err := (&registry.Changes{URL: npm.URL + "/_changes"}).Poll(context.Background(), "", time.Millisecond, 0)
	if err != nil || len(page.Results) != 0 || page.LastSeq != "2" {
		t.Fatalf("first poll: %+v %v", page, err)
	}
	var asked string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/db/_changes" {
			http.NotFound(w, r)
			return
		}
		asked = r.URL.Query().Get("since")
		w.Write([]byte(`{"results":[],"last_seq":"7-abc"}`))
	}))
	defer srv.Close()
	page, err = (&registry.Changes{URL: srv.URL + "/db/_changes"}).Poll(context.Background(), "", time.Millisecond, 0)
	if err != nil || asked != "now" || page.LastSeq != "7-abc" {
		t.Fatalf("no update_seq served: asked since=%q, got %+v %v", asked, page, err)
	}
}
