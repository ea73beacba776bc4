package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultChangesURL is the npm registry's public replication feed (CouchDB's
// _changes, served by npm since its 2025 replication API change with
// numeric sequences).
const DefaultChangesURL = "https://replicate.npmjs.com/registry/_changes"

// Changes reads a registry's changes feed with CouchDB's replication
// protocol: `GET _changes?since=SEQ&feed=longpoll&timeout=MS&limit=N`
// answers the changes after SEQ, each with its own sequence, and last_seq,
// or waits up to the timeout for the first one. The zero value reads npm's
// public feed with http.DefaultClient.
type Changes struct {
	URL       string
	Client    *http.Client
	UserAgent string
	// Stall is how much longer than its wait a long-poll may take before
	// it counts as stalled; 0 means 15 s.
	Stall time.Duration
}

// Change is one changed document (a package) of the feed.
type Change struct {
	Seq     string // opaque; as the feed wrote it
	ID      string // the package's name
	Deleted bool
}

// ChangesPage is one answer of the feed.
type ChangesPage struct {
	Results []Change
	LastSeq string
}

// MaxChangesBytes bounds one page of the feed (the limit asked keeps it far
// smaller).
const MaxChangesBytes = 32 << 20

// Poll asks for at most limit changes after since ("": only those from
// now on, after the database's update_seq), waiting up to wait for the first. A feed that does not
// answer within wait plus the stall bound, or answers with an error status,
// is an error saying so.
func (c *Changes) Poll(ctx context.Context, since string, wait time.Duration, limit int) (*ChangesPage, error) {
	feed := c.URL
	if feed == "" {
		feed = DefaultChangesURL
	}
	what := "registry changes feed"
	u, err := url.Parse(feed)
	if err != nil {
		return nil, fmt.Errorf("%s: bad URL %s: %w", what, redactURL(feed), withoutURL(err))
	}
	if since == "" {
		since = c.latest(ctx, u)
	}
	q := u.Query()
	q.Set("since", since)
	q.Set("feed", "longpoll")
	q.Set("timeout", strconv.FormatInt(wait.Milliseconds(), 10))
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	u.RawQuery = q.Encode()
	stall := c.Stall
	if stall <= 0 {
		stall = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, wait+stall)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	req.Header.Set("Accept", "application/json")
	// npm routed the new replication API by this header before it became
	// the only one; sending it is harmless everywhere.
	req.Header.Set("npm-replication-opt-in", "true")
	userAgent := c.UserAgent
	if userAgent == "" {
		userAgent = DefaultUserAgent
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := do(c.Client, req, what)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s stalled: no answer within %s (a long-poll of %s): %w", what, wait+stall, wait, err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(resp, what, "")
	}
	body, err := readLimited(resp.Body, MaxChangesBytes, what)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s stalled mid-answer: not done within %s: %w", what, wait+stall, err)
		}
		return nil, err
	}
	return parseChanges(body, what)
}

// latest is the feed's current sequence, for a follower's first poll: the
// database's update_seq (GET on the feed's parent, as CouchDB and npm
// answer it), or CouchDB's "now" when that cannot be read.
func (c *Changes) latest(ctx context.Context, feed *url.URL) string {
	root := *feed
	root.Path = strings.TrimSuffix(root.Path, "_changes")
	root.RawQuery = ""
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, root.String(), nil)
	if err != nil {
		return "now"
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("npm-replication-opt-in", "true")
	resp, err := httpClient(c.Client).Do(req)
	if err != nil {
		return "now"
	}
	defer resp.Body.Close()
	body, err := readLimited(resp.Body, 1<<20, "registry database")
	if err != nil || resp.StatusCode != http.StatusOK {
		return "now"
	}
	var info struct {
		UpdateSeq json.RawMessage `json:"update_seq"`
	}
	if json.Unmarshal(body, &info) != nil {
		return "now"
	}
	if seq, err := seqString(info.UpdateSeq); err == nil && seq != "" {
		return seq
	}
	return "now"
}

// parseChanges reads a normal or long-poll answer:
// {"results":[{"seq":N,"id":"name","changes":[...]}],"last_seq":N}. A
// sequence may be a number (npm) or a string (CouchDB 2 and later); either
// is kept as written.
func parseChanges(body []byte, what string) (*ChangesPage, error) {
	var raw struct {
		Results []struct {
			Seq     json.RawMessage `json:"seq"`
			ID      string          `json:"id"`
			Deleted bool            `json:"deleted"`
		} `json:"results"`
		LastSeq json.RawMessage `json:"last_seq"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("%s: malformed answer: %w", what, err)
	}
	page := &ChangesPage{}
	var err error
	if page.LastSeq, err = seqString(raw.LastSeq); err != nil || page.LastSeq == "" {
		return nil, fmt.Errorf("%s: the answer has no last_seq", what)
	}
	for i, r := range raw.Results {
		seq, err := seqString(r.Seq)
		if err != nil || seq == "" {
			return nil, fmt.Errorf("%s: result %d has no sequence", what, i)
		}
		page.Results = append(page.Results, Change{Seq: seq, ID: r.ID, Deleted: r.Deleted})
	}
	return page, nil
}

// seqString is a sequence as the feed wants it back: a number's digits, or
// a string's content.
func seqString(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", err
	}
	return n.String(), nil
}
