package console

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A result encoding/json cannot encode (a NaN) is answered with a 500 and
// an error in the envelope, not a 200 with an empty body.
func TestWriteJSONAnswersAnUnencodableResultWith500(t *testing.T) {
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusOK, Envelope{Success: true, Result: map[string]float64{"rate": math.NaN()}})
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500; body %q", rec.Code, rec.Body.String())
	}
	var env Envelope
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatalf("body %q is not an envelope: %v", rec.Body.String(), err)
	}
	if env.Success || len(env.Errors) != 1 || env.Errors[0].Code != CodeInternal {
		t.Fatalf("envelope %+v, want success false and one internal error", env)
	}
}

// The usual answer is unchanged: the status asked for, indented JSON, one
// trailing newline.
func TestWriteJSONWritesTheEnvelope(t *testing.T) {
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusCreated, Envelope{Success: true, Result: map[string]int{"n": 1}})
	want := "{\n  \"success\": true,\n  \"errors\": [],\n  \"messages\": [],\n  \"result\": {\n    \"n\": 1\n  }\n}\n"
	if rec.Code != http.StatusCreated || rec.Body.String() != want || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, type %q, body %q; want 201, application/json, %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), want)
	}
}
