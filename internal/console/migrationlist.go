package console

import (
	"encoding/json"
	"net/http"

	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
)

// cursorInfo is the result_info of a list paged by cursor (Cloudflare's
// cursor-paged lists): the rows in this page and, while there may be
// more, the cursor of the next. Page is set when the caller asked by page
// number.
type cursorInfo struct {
	Page    int    `json:"page,omitempty"`
	PerPage int    `json:"per_page"`
	Count   int    `json:"count"`
	Cursor  string `json:"cursor,omitempty"`
}

// cursorEnvelope is the envelope with a cursorInfo as its result_info.
type cursorEnvelope struct {
	Envelope
	ResultInfo *cursorInfo `json:"result_info"`
}

// list is GET /api/v1/migrations: one page of jobs, read from the stores
// a page at a time (jobclient.ListPage), never every job. ?cursor= goes
// on from a previous page's result_info.cursor; ?page=N (without a cursor)
// reads the N-1 pages before it.
func (a migrationAPI) list(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	page, perPage, perr := paging(r)
	if perr != nil {
		return 0, nil, nil, perr
	}
	q := r.URL.Query()
	o := jobclient.PageOptions{Account: q.Get("account"), State: q.Get("state"), PerPage: perPage, Cursor: q.Get("cursor")}
	info := &cursorInfo{PerPage: perPage}
	if o.Cursor == "" {
		info.Page = page
	} else if q.Has("page") {
		return 0, nil, nil, fail(http.StatusBadRequest, CodeInvalid, "page: give page or cursor, not both")
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	fromCursor := o.Cursor != ""
	var p jobclient.Page
	for n := 1; ; n++ {
		var err error
		if p, err = jobclient.ListPage(ctx, a.tc, a.jobStore, o); err != nil {
			return 0, nil, nil, err
		}
		if fromCursor || n == page {
			break
		}
		if p.Next == "" {
			p = jobclient.Page{} // past the last page
			break
		}
		o.Cursor = p.Next
	}
	rows := p.Rows
	if rows == nil {
		rows = []jobclient.Row{}
	}
	info.Count, info.Cursor = len(rows), p.Next
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(cursorEnvelope{Envelope: Envelope{Success: true, Errors: []Message{}, Messages: []Message{}, Result: rows}, ResultInfo: info})
	return 0, nil, nil, errWritten
}
