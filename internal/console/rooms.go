package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
)

// roomAPI serves /api/v1/waiting_rooms on the room starter's own functions
// (roomclient, admit's settings and event parsing): no rule is checked here
// that the starter and the room workflow do not check themselves.
type roomAPI struct {
	rc      roomclient.Client
	timeout time.Duration // per call to Temporal
	log     *slog.Logger
}

func (a roomAPI) routes() []route {
	return []route{
		{"GET /api/v1/waiting_rooms", a.list},
		{"POST /api/v1/waiting_rooms", a.create},
		{"GET /api/v1/waiting_rooms/{name}", a.get},
		{"PATCH /api/v1/waiting_rooms/{name}", a.patch},
		{"DELETE /api/v1/waiting_rooms/{name}", a.delete},
		{"GET /api/v1/waiting_rooms/{name}/status", a.status},
		{"GET /api/v1/waiting_rooms/{name}/minutes", a.minutes},
		{"GET /api/v1/waiting_rooms/{name}/events", a.events},
		{"POST /api/v1/waiting_rooms/{name}/events", a.addEvent},
		{"DELETE /api/v1/waiting_rooms/{name}/events/{event}", a.cancelEvent},
	}
}

func (a roomAPI) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), a.timeout)
}

// roomName is the path's {name}, checked like the starter checks it.
func roomName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if !admit.ValidName(name) {
		return "", fail(http.StatusBadRequest, CodeInvalid, "name: must be 1-64 letters, digits, hyphens or underscores, got %q", name)
	}
	return name, nil
}

func (a roomAPI) list(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	page, perPage, perr := paging(r)
	if perr != nil {
		return 0, nil, nil, perr
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	rows, err := a.rc.List(ctx, false) // the function behind `room list`
	if err != nil {
		return 0, nil, nil, err
	}
	out, info := pageOf(rows, page, perPage)
	return http.StatusOK, out, info, nil
}

// describe is a room that exists and is not deleted.
func (a roomAPI) describe(ctx context.Context, name string) (admit.Settings, int64, []admit.Event, error) {
	d, err := a.rc.Describe(ctx, name)
	if err != nil {
		return admit.Settings{}, 0, nil, err
	}
	if d.Deleted {
		return admit.Settings{}, 0, nil, roomclient.ErrDeleted
	}
	return d.Settings, d.SettingsVersion, d.Events, nil
}

// settingsOut answers with a room's settings as stored, their version in
// the ETag (the If-Match of the next PATCH).
func (a roomAPI) settingsOut(ctx context.Context, w http.ResponseWriter, name string, status int) (int, any, *ResultInfo, error) {
	s, version, _, err := a.describe(ctx, name)
	if err != nil {
		return 0, nil, nil, err
	}
	w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(version, 10)))
	return status, s, nil, nil
}

func (a roomAPI) create(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	body, berr := readBody(w, r)
	if berr != nil {
		return 0, nil, nil, berr
	}
	s, err := admit.ParseSettings(body)
	if err != nil {
		return 0, nil, nil, err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	if _, err := a.rc.Create(ctx, s, roomclient.CreateOptions{}); err != nil {
		return 0, nil, nil, err
	}
	w.Header().Set("Location", "/api/v1/waiting_rooms/"+s.Name)
	return a.settingsOut(ctx, w, s.Name, http.StatusCreated)
}

func (a roomAPI) get(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	name, err := roomName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	return a.settingsOut(ctx, w, name, http.StatusOK)
}

// patch changes the fields the body names (a JSON merge patch of the
// settings' top level: null resets a field to its default). With If-Match
// the change applies only to that settings version (409 otherwise);
// without, it is read-modify-write like `room update`.
func (a roomAPI) patch(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	name, err := roomName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	ifVersion, err := ifMatch(r.Header.Get("If-Match"))
	if err != nil {
		return 0, nil, nil, err
	}
	body, berr := readBody(w, r)
	if berr != nil {
		return 0, nil, nil, berr
	}
	var patch map[string]json.RawMessage
	if err := json.Unmarshal(body, &patch); err != nil {
		return 0, nil, nil, fail(http.StatusBadRequest, CodeInvalid, "(document): not a JSON object: %v", err)
	}
	apply := func(s *admit.Settings) error {
		next, err := mergeSettings(*s, patch)
		if err != nil {
			return err
		}
		if next.Name != name {
			return &admit.InvalidError{Problems: []*admit.FieldError{{Field: "name", Reason: fmt.Sprintf("cannot change (the room is %q; create a new room instead)", name)}}}
		}
		next = next.WithDefaults()
		if err := next.Validate(); err != nil {
			return err
		}
		*s = next
		return nil
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	if ifVersion == 0 {
		if _, err := a.rc.Modify(ctx, name, apply); err != nil {
			return 0, nil, nil, err
		}
		return a.settingsOut(ctx, w, name, http.StatusOK)
	}
	s, version, _, err := a.describe(ctx, name)
	if err != nil {
		return 0, nil, nil, err
	}
	if version != ifVersion {
		return 0, nil, nil, roomclient.ErrConflict
	}
	if err := apply(&s); err != nil {
		return 0, nil, nil, err
	}
	if _, err := a.rc.Update(ctx, s, ifVersion); err != nil {
		return 0, nil, nil, err
	}
	return a.settingsOut(ctx, w, name, http.StatusOK)
}

// ifMatch reads the settings version from If-Match ("7", 7 or W/"7");
// empty is 0 (no condition).
func ifMatch(h string) (int64, error) {
	if h == "" {
		return 0, nil
	}
	v := strings.Trim(strings.TrimPrefix(strings.TrimSpace(h), "W/"), `"`)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, fail(http.StatusBadRequest, CodeInvalid, "If-Match: must be the settings version (the ETag of GET), got %q", h)
	}
	return n, nil
}

// mergeSettings applies a top-level merge patch to base and decodes the
// result strictly, so an unknown or mistyped field is refused by name.
func mergeSettings(base admit.Settings, patch map[string]json.RawMessage) (admit.Settings, error) {
	raw, err := json.Marshal(base)
	if err != nil {
		return admit.Settings{}, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return admit.Settings{}, err
	}
	for k, v := range patch {
		if string(v) == "null" {
			delete(doc, k)
			continue
		}
		doc[k] = v
	}
	if raw, err = json.Marshal(doc); err != nil {
		return admit.Settings{}, err
	}
	return admit.DecodeSettings(raw)
}

func (a roomAPI) delete(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	name, err := roomName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	if _, _, _, err := a.describe(ctx, name); err != nil {
		return 0, nil, nil, err // a deleted room is not deleted twice
	}
	if _, err := a.rc.Delete(ctx, name); err != nil {
		return 0, nil, nil, err
	}
	return http.StatusOK, map[string]string{"name": name}, nil, nil
}

func (a roomAPI) status(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	name, err := roomName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	snap, err := a.rc.Snapshot(ctx, name)
	if err != nil {
		return 0, nil, nil, err
	}
	st, err := a.rc.Status(ctx, name, &snap)
	if err != nil && !errors.Is(err, roomclient.ErrNoLiveSource) {
		// The answer's live.error says only that it could not be read.
		a.log.Warn("the room's live view", "room", name, "err", err)
	}
	return http.StatusOK, st, nil, nil
}

func (a roomAPI) events(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	name, err := roomName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	page, perPage, perr := paging(r)
	if perr != nil {
		return 0, nil, nil, perr
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	_, _, events, err := a.describe(ctx, name)
	if err != nil {
		return 0, nil, nil, err
	}
	out, info := pageOf(events, page, perPage)
	return http.StatusOK, out, info, nil
}

func (a roomAPI) addEvent(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	name, err := roomName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	body, berr := readBody(w, r)
	if berr != nil {
		return 0, nil, nil, berr
	}
	e, err := admit.ParseEvent(body)
	if err != nil {
		return 0, nil, nil, err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	if _, err := a.rc.AddEvent(ctx, name, e); err != nil {
		return 0, nil, nil, err
	}
	w.Header().Set("Location", "/api/v1/waiting_rooms/"+name+"/events/"+e.Name)
	return http.StatusCreated, e, nil, nil
}

func (a roomAPI) cancelEvent(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	name, err := roomName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	event := r.PathValue("event")
	if _, err := a.rc.CancelEvent(ctx, name, event); err != nil {
		return 0, nil, nil, err
	}
	return http.StatusOK, map[string]string{"name": event}, nil, nil
}

// roomError maps roomclient's errors to the API's; nil for any other (an
// unreachable Temporal too: failure.Hide answers it without its cause).
func roomError(err error) *apiError {
	var inv *admit.InvalidError
	switch {
	case errors.As(err, &inv):
		e := &apiError{status: http.StatusBadRequest}
		for _, p := range inv.Problems {
			e.errs = append(e.errs, Message{Code: CodeInvalid, Message: p.Field + ": " + p.Reason})
		}
		return e
	case errors.Is(err, roomclient.ErrNotFound):
		return fail(http.StatusNotFound, CodeNotFound, "name: no such room")
	case errors.Is(err, roomclient.ErrDeleted):
		return fail(http.StatusNotFound, CodeNotFound, "name: the room is deleted (POST /api/v1/waiting_rooms creates it again)")
	case errors.Is(err, roomclient.ErrExists):
		return fail(http.StatusConflict, CodeConflict, "name: a room of that name exists (PATCH changes it)")
	case errors.Is(err, roomclient.ErrConflict):
		return fail(http.StatusConflict, CodeConflict, "If-Match: the room's settings changed meanwhile; GET them and try again")
	case errors.Is(err, roomclient.ErrNoSuchEvent):
		return fail(http.StatusNotFound, CodeNotFound, "event: %v", err)
	}
	return nil
}
