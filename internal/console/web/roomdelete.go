package web

import (
	"net/http"
	"net/url"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// deleteRoom deletes a room as DELETE /api/v1/waiting_rooms/{name} does (a
// deleted room is not deleted twice), after a confirmation step: the room
// page's button asks, the confirmation page's form (confirm=the room's
// name) deletes.
func (p *Pages) deleteRoom(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	if !admit.ValidName(name) {
		p.fail(w, http.StatusNotFound, "name: must be 1-64 letters, digits, hyphens or underscores")
		return
	}
	ctx, cancel := p.ctx(r)
	defer cancel()
	_, err := p.liveRoom(ctx, name)
	if err == nil && r.PostFormValue("confirm") != name {
		p.render(w, http.StatusOK, "roomdelete", view{Title: "Delete the room " + name + "?", User: s.user, CSRF: s.csrf,
			WebUI: p.workflowURL(contract.RoomWorkflowID(name)), Content: name})
		return
	}
	if err == nil {
		_, err = p.o.Rooms.Delete(ctx, name)
	}
	if err != nil {
		p.roomFailed(w, r, s, name, err)
		return
	}
	http.Redirect(w, r, "/?deleted="+url.QueryEscape(name), http.StatusSeeOther)
}
