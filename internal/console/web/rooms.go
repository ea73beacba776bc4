package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

func (p *Pages) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), p.o.Timeout)
}

// roomsView is the Manage table and the create form.
type roomsView struct {
	Rooms    []admit.RoomListEntry
	Form     roomForm
	ReadOnly bool
}

// rooms is the Manage table: `room list`'s function and rows.
func (p *Pages) rooms(w http.ResponseWriter, r *http.Request, s *session, status int, form roomForm, errs []string) {
	ctx, cancel := p.ctx(r)
	defer cancel()
	rows, err := p.o.Rooms.List(ctx, false)
	if err != nil {
		errs = append(errs, "rooms: "+p.roomMessage(r, err))
		if status == http.StatusOK {
			status = http.StatusBadGateway
		}
	}
	if form.Values == nil {
		form = formOf(admit.Settings{}.WithDefaults())
		form.Values.Del("total_active_users")
		form.Values.Del("new_users_per_minute")
		form.Creating = true
	}
	notice := ""
	if d := r.URL.Query().Get("deleted"); admit.ValidName(d) && r.Method == http.MethodGet {
		notice = "Room " + d + " deleted."
	}
	p.render(w, status, "rooms", view{Title: "Waiting rooms", User: s.user, CSRF: s.csrf, Errors: errs, Notice: notice,
		WebUI:   p.workflowsURL(`WorkflowType="` + contract.WorkflowTypeRoom + `"`),
		Content: roomsView{Rooms: rows, Form: form, ReadOnly: s.readOnly}})
}

func (p *Pages) createRoom(w http.ResponseWriter, r *http.Request, s *session) {
	settings, err := newSettings(r.PostForm)
	if err == nil {
		ctx, cancel := p.ctx(r)
		defer cancel()
		_, err = p.o.Rooms.Create(ctx, settings, roomclient.CreateOptions{})
	}
	if err != nil {
		byField, all := problems(err)
		if errors.Is(err, roomclient.ErrExists) {
			byField["name"], all = "name: a room of that name exists", nil
		}
		p.rooms(w, r, s, statusOf(err), roomForm{Values: r.PostForm, Errors: byField, Creating: true}, p.messagesOf(r, err, all))
		return
	}
	http.Redirect(w, r, "/rooms/"+settings.Name, http.StatusSeeOther)
}

// roomView is a room's page.
type roomView struct {
	Name     string
	Version  int64
	Status   admit.StatusAPI
	Settings admit.Settings
	Events   []admit.Event
	Form     roomForm
	Event    roomForm
	Chart    chartView
	Live     *admit.Live
	ReadOnly bool
}

func (p *Pages) room(w http.ResponseWriter, r *http.Request, s *session) {
	notice := ""
	if r.URL.Query().Get("saved") != "" {
		notice = "Settings saved."
	}
	p.showRoom(w, r, s, http.StatusOK, nil, nil, notice)
}

// showRoom renders a room's page; a form that failed is shown again with
// its values and errors instead of the stored ones.
func (p *Pages) showRoom(w http.ResponseWriter, r *http.Request, s *session, status int, settingsForm, eventForm *roomForm, notice string, errs ...string) {
	name := r.PathValue("name")
	if !admit.ValidName(name) {
		p.render(w, http.StatusNotFound, "signin", view{Title: "No such room", User: s.user, CSRF: s.csrf, Back: true,
			Errors: []string{"name: must be 1-64 letters, digits, hyphens or underscores"}})
		return
	}
	ctx, cancel := p.ctx(r)
	defer cancel()
	d, err := p.liveRoom(ctx, name)
	if err != nil {
		p.roomFailed(w, r, s, name, err)
		return
	}
	v := roomView{Name: name, Version: d.SettingsVersion, Status: d.Snapshot.StatusAPI(), Settings: d.Settings,
		Events: d.Events, Chart: chartOf(d.Recent, d.Snapshot.TrafficHistory), ReadOnly: s.readOnly, Event: roomForm{},
		Live: p.live(ctx, name, &d.Snapshot)}
	if settingsForm != nil {
		v.Form = *settingsForm
	} else {
		v.Form = formOf(d.Settings)
	}
	if eventForm != nil {
		v.Event = *eventForm
	}
	p.render(w, status, "room", view{Title: "Room " + name, User: s.user, CSRF: s.csrf, Notice: notice, Errors: errs,
		WebUI: p.workflowURL(contract.RoomWorkflowID(name)), Content: v})
}

// roomChart is the chart alone, for the page's script to refresh.
func (p *Pages) roomChart(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	if !admit.ValidName(name) {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	ctx, cancel := p.ctx(r)
	defer cancel()
	d, err := p.o.Rooms.Describe(ctx, name)
	if err != nil {
		w.WriteHeader(statusOf(err))
		return
	}
	p.render(w, http.StatusOK, "chart", view{Content: chartOf(d.Recent, d.Snapshot.TrafficHistory)})
}

// roomLive is the live view alone, for the page's script to refresh every
// few seconds. It answers a fragment even when the room does not, saying
// the view is unavailable: the page must not keep showing old figures.
func (p *Pages) roomLive(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	if !admit.ValidName(name) {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	ctx, cancel := p.ctx(r)
	defer cancel()
	snap, err := p.o.Rooms.Snapshot(ctx, name)
	live := admit.LiveUnavailable("the room did not answer: " + p.roomMessage(r, err))
	if err == nil {
		live = p.live(ctx, name, &snap)
	}
	w.Header().Set("Cache-Control", "no-store")
	p.render(w, http.StatusOK, "live", view{Content: live})
}

// live is the room's live view; why it could not be read is logged.
func (p *Pages) live(ctx context.Context, name string, snap *admit.Snapshot) *admit.Live {
	live, err := p.o.Rooms.Live(ctx, name, snap)
	if err != nil && !errors.Is(err, roomclient.ErrNoLiveSource) {
		p.o.Log.Warn("the room's live view", "room", name, "err", err)
	}
	return live
}

// updateRoom applies the settings form to the version it was rendered
// from: a change made meanwhile is a conflict, not overwritten.
func (p *Pages) updateRoom(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	version, _ := strconv.ParseInt(r.PostFormValue("version"), 10, 64)
	ctx, cancel := p.ctx(r)
	defer cancel()
	d, err := p.o.Rooms.Describe(ctx, name)
	if err == nil && d.SettingsVersion != version {
		err = roomclient.ErrConflict
	}
	var next admit.Settings
	if err == nil {
		next, err = changedSettings(d.Settings, r.PostForm)
	}
	if err == nil {
		_, err = p.o.Rooms.Update(ctx, next, version)
	}
	if err != nil {
		byField, all := problems(err)
		form := &roomForm{Values: r.PostForm, Errors: byField}
		if errors.Is(err, roomclient.ErrConflict) {
			form = nil // show what is stored now
		}
		p.showRoom(w, r, s, statusOf(err), form, nil, "", p.messagesOf(r, err, all)...)
		return
	}
	http.Redirect(w, r, "/rooms/"+name+"?saved=1", http.StatusSeeOther)
}

// suspend sets or clears the suspended setting, as `room suspend` does.
func (p *Pages) suspend(on bool) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		name := r.PathValue("name")
		ctx, cancel := p.ctx(r)
		defer cancel()
		_, err := p.o.Rooms.Modify(ctx, name, func(st *admit.Settings) error {
			st.Suspended = on
			return nil
		})
		if err != nil {
			_, all := problems(err)
			p.showRoom(w, r, s, statusOf(err), nil, nil, "", p.messagesOf(r, err, all)...)
			return
		}
		http.Redirect(w, r, "/rooms/"+name, http.StatusSeeOther)
	}
}

func (p *Pages) addEvent(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	e, err := newEvent(r.PostForm)
	if err == nil {
		ctx, cancel := p.ctx(r)
		defer cancel()
		_, err = p.o.Rooms.AddEvent(ctx, name, e)
	}
	if err != nil {
		byField, all := problems(err)
		p.showRoom(w, r, s, statusOf(err), nil, &roomForm{Values: r.PostForm, Errors: byField}, "", p.messagesOf(r, err, all)...)
		return
	}
	http.Redirect(w, r, "/rooms/"+name, http.StatusSeeOther)
}

func (p *Pages) cancelEvent(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	ctx, cancel := p.ctx(r)
	defer cancel()
	if _, err := p.o.Rooms.CancelEvent(ctx, name, r.PathValue("event")); err != nil {
		_, all := problems(err)
		p.showRoom(w, r, s, statusOf(err), nil, nil, "", p.messagesOf(r, err, all)...)
		return
	}
	http.Redirect(w, r, "/rooms/"+name, http.StatusSeeOther)
}

// statusOf maps roomclient's errors to statuses, as the API does.
func statusOf(err error) int {
	var inv *admit.InvalidError
	switch {
	case err == nil:
		return http.StatusNotFound
	case errors.As(err, &inv):
		return http.StatusBadRequest
	case errors.Is(err, roomclient.ErrNotFound), errors.Is(err, roomclient.ErrDeleted), errors.Is(err, roomclient.ErrNoSuchEvent):
		return http.StatusNotFound
	case errors.Is(err, roomclient.ErrExists), errors.Is(err, roomclient.ErrConflict):
		return http.StatusConflict
	case roomclient.Unavailable(err):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

// roomMessage words roomclient's errors as the API does; a failure of
// the console's (an unreachable Temporal …) is logged and only named
// (failure.Hide).
func (p *Pages) roomMessage(r *http.Request, err error) string {
	switch {
	case errors.Is(err, roomclient.ErrNotFound):
		return "no such room"
	case errors.Is(err, roomclient.ErrDeleted):
		return "the room is deleted"
	case errors.Is(err, roomclient.ErrConflict):
		return "the room's settings changed meanwhile; the form now shows them, change them again"
	}
	return p.hide(r, err)
}

// messagesOf are the page's error lines: the field problems, else the
// room error in words.
func (p *Pages) messagesOf(r *http.Request, err error, fieldProblems []string) []string {
	var inv *admit.InvalidError
	if errors.As(err, &inv) {
		return fieldProblems
	}
	return []string{p.roomMessage(r, err)}
}

// liveRoom describes a room, a deleted one being an error (ErrDeleted).
func (p *Pages) liveRoom(ctx context.Context, name string) (contract.Description, error) {
	d, err := p.o.Rooms.Describe(ctx, name)
	if err == nil && d.Deleted {
		err = roomclient.ErrDeleted
	}
	return d, err
}

// roomFailed shows why a room's page or action failed.
func (p *Pages) roomFailed(w http.ResponseWriter, r *http.Request, s *session, name string, err error) {
	p.render(w, statusOf(err), "signin", view{Title: "Room " + name, User: s.user, CSRF: s.csrf, Back: true,
		WebUI: p.workflowURL(contract.RoomWorkflowID(name)), Errors: []string{"room: " + p.roomMessage(r, err)}})
}
