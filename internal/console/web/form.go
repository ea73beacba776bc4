package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// fieldKind is how a form value becomes a settings field.
type fieldKind int

const (
	textField fieldKind = iota
	numberField
	boolField // a checkbox: absent is false
)

// settingsFields are the settings the forms edit, by their JSON names (the
// API's and `room get --json`'s): the form is turned into the same JSON
// document the API takes and decoded and validated by admit's own code, so
// a page shows exactly the API's messages.
var settingsFields = []struct {
	name, label string
	kind        fieldKind
	options     []string // a choice; empty: free text
}{
	{"name", "Name", textField, nil},
	{"description", "Description", textField, nil},
	{"host", "Host (empty: every host)", textField, nil},
	{"path", "Path", textField, nil},
	{"total_active_users", "Total active users", numberField, nil},
	{"new_users_per_minute", "New users per minute", numberField, nil},
	{"session_duration", "Session duration (minutes)", numberField, nil},
	{"queueing_method", "Queueing method", textField, []string{string(admit.FIFO), string(admit.Random), string(admit.Passthrough), string(admit.Reject)}},
	{"queueing_status_code", "Queueing status code", numberField, []string{"200", "202", "429"}},
	{"queue_capacity", "Queue capacity (empty: none)", numberField, nil},
	{"queue_all", "Queue all visitors", boolField, nil},
	{"disable_session_renewal", "Disable session renewal", boolField, nil},
	{"json_response_enabled", "JSON response enabled", boolField, nil},
}

// formField is one input of a settings form, for the template.
type formField struct {
	Name, Label, Value, Error string
	Input                     string // text, number, checkbox or select
	Options                   []string
	Checked                   bool
}

// roomForm is a settings form as posted (to show it again with its errors).
type roomForm struct {
	Values   url.Values
	Errors   map[string]string // by field
	Creating bool              // the name is asked for
}

// Fields are the settings form's inputs with their values and errors.
func (f roomForm) Fields() []formField {
	var out []formField
	for _, sf := range settingsFields {
		if sf.name == "name" && !f.Creating {
			continue
		}
		ff := formField{Name: sf.name, Label: sf.label, Value: f.Values.Get(sf.name), Error: f.Errors[sf.name], Options: sf.options, Input: "text"}
		switch {
		case sf.options != nil:
			ff.Input = "select"
		case sf.kind == numberField:
			ff.Input = "number"
		case sf.kind == boolField:
			ff.Input, ff.Checked = "checkbox", ff.Value != ""
		}
		out = append(out, ff)
	}
	return out
}

func (f roomForm) Value(name string) string { return f.Values.Get(name) }
func (f roomForm) Error(name string) string { return f.Errors[name] }

// formOf fills a form from settings, for editing them.
func formOf(s admit.Settings) roomForm {
	raw, _ := json.Marshal(s)
	var doc map[string]any
	_ = json.Unmarshal(raw, &doc)
	v := url.Values{}
	for _, f := range settingsFields {
		switch x := doc[f.name].(type) {
		case string:
			v.Set(f.name, x)
		case float64:
			v.Set(f.name, strconv.FormatFloat(x, 'f', -1, 64))
		case bool:
			if x {
				v.Set(f.name, "on")
			}
		}
	}
	return roomForm{Values: v}
}

// overlay writes the form's fields into a settings document: an empty text
// or number field is left out (its default), a number that is not one is
// a problem named by its field.
func overlay(doc map[string]any, form url.Values, skip string) []*admit.FieldError {
	var problems []*admit.FieldError
	for _, f := range settingsFields {
		if f.name == skip {
			continue
		}
		v := strings.TrimSpace(form.Get(f.name))
		switch f.kind {
		case boolField:
			doc[f.name] = v != ""
		case numberField:
			if v == "" {
				delete(doc, f.name)
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				problems = append(problems, &admit.FieldError{Field: f.name, Reason: fmt.Sprintf("must be a whole number, got %q", v)})
				continue
			}
			doc[f.name] = n
		default:
			if v == "" {
				delete(doc, f.name)
				continue
			}
			doc[f.name] = v
		}
	}
	return problems
}

// newSettings are a create form's settings, validated as the API's POST
// validates them.
func newSettings(form url.Values) (admit.Settings, error) {
	doc := map[string]any{}
	if problems := overlay(doc, form, ""); len(problems) > 0 {
		return admit.Settings{}, &admit.InvalidError{Problems: problems}
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return admit.Settings{}, err
	}
	return admit.ParseSettings(raw)
}

// changedSettings are base with a settings form applied, validated as the
// API's PATCH validates them; the name cannot change.
func changedSettings(base admit.Settings, form url.Values) (admit.Settings, error) {
	raw, err := json.Marshal(base)
	if err != nil {
		return admit.Settings{}, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return admit.Settings{}, err
	}
	if problems := overlay(doc, form, "name"); len(problems) > 0 {
		return admit.Settings{}, &admit.InvalidError{Problems: problems}
	}
	if raw, err = json.Marshal(doc); err != nil {
		return admit.Settings{}, err
	}
	next, err := admit.DecodeSettings(raw)
	if err != nil {
		return admit.Settings{}, err
	}
	next = next.WithDefaults()
	return next, next.Validate()
}

// eventFields are the event form's inputs (the API's names).
var eventFields = []formField{
	{Name: "name", Label: "Name", Input: "text"},
	{Name: "description", Label: "Description", Input: "text"},
	{Name: "prequeue_start_time", Label: "Pre-queue starts (optional)", Input: "datetime-local"},
	{Name: "event_start_time", Label: "Starts", Input: "datetime-local"},
	{Name: "event_end_time", Label: "Ends", Input: "datetime-local"},
	{Name: "total_active_users", Label: "Total active users (empty: the room's)", Input: "number"},
	{Name: "new_users_per_minute", Label: "New users per minute (empty: the room's)", Input: "number"},
}

// newEvent is an event form's event, parsed by admit's own parser. Times
// are the form's datetime-local values, read as UTC (the page says so).
func newEvent(form url.Values) (admit.Event, error) {
	doc := map[string]any{}
	var problems []*admit.FieldError
	if v := strings.TrimSpace(form.Get("name")); v != "" {
		doc["name"] = v
	}
	if v := strings.TrimSpace(form.Get("description")); v != "" {
		doc["description"] = v
	}
	for _, f := range []string{"prequeue_start_time", "event_start_time", "event_end_time"} {
		v := strings.TrimSpace(form.Get(f))
		if v == "" {
			continue
		}
		t, err := parseLocal(v)
		if err != nil {
			problems = append(problems, &admit.FieldError{Field: f, Reason: fmt.Sprintf("must be a date and time like 2030-05-01T09:00, got %q", v)})
			continue
		}
		doc[f] = t
	}
	for _, f := range []string{"total_active_users", "new_users_per_minute"} {
		v := strings.TrimSpace(form.Get(f))
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			problems = append(problems, &admit.FieldError{Field: f, Reason: fmt.Sprintf("must be a whole number, got %q", v)})
			continue
		}
		doc[f] = n
	}
	if len(problems) > 0 {
		return admit.Event{}, &admit.InvalidError{Problems: problems}
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return admit.Event{}, err
	}
	return admit.ParseEvent(raw)
}

func parseLocal(v string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a time")
}

// problems splits an error into messages by field (an *InvalidError) and
// the rest, in the API's "field: reason" words.
func problems(err error) (byField map[string]string, all []string) {
	byField = map[string]string{}
	var inv *admit.InvalidError
	if errors.As(err, &inv) {
		for _, p := range inv.Problems {
			msg := p.Field + ": " + p.Reason
			if _, dup := byField[p.Field]; !dup {
				byField[p.Field] = msg
			}
			all = append(all, msg)
		}
		return byField, all
	}
	return byField, []string{err.Error()}
}
