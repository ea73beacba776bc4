package gate

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

func TestJSONResponse(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "app", TotalActiveUsers: 1, NewUsersPerMinute: 1, JSONResponseEnabled: true,
		QueueingMethod: admit.Random, QueueingStatusCode: 202})
	mustOrigin(t, h.get(newVisitor(), "/"), "first visitor")
	res := h.get(newVisitor(), "/api/items", "Accept", "text/html;q=0.5, application/json")
	if res.status != 202 || res.header.Get("Content-Type") != "application/json" || res.header.Get("Refresh") == "" {
		t.Fatalf("JSON queue answer: %d %v %s", res.status, res.header, res.body)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal([]byte(res.body), &doc); err != nil {
		t.Fatal(err)
	}
	room := doc["cfWaitingRoom"]
	for _, field := range []string{"inWaitingRoom", "waitTimeKnown", "waitTime", "waitTime25Percentile", "waitTime50Percentile",
		"waitTime75Percentile", "waitTimeFormatted", "queueIsFull", "queueAll", "lastUpdated", "refreshIntervalSeconds",
		"queueingMethod", "isFIFOQueue", "isRandomQueue"} {
		if _, ok := room[field]; !ok {
			t.Errorf("cfWaitingRoom lacks %s: %s", field, res.body)
		}
	}
	if room["inWaitingRoom"] != true || room["queueingMethod"] != "random" || room["isRandomQueue"] != true || room["isFIFOQueue"] != false {
		t.Errorf("cfWaitingRoom: %v", room)
	}
	if refresh := room["refreshIntervalSeconds"].(float64); res.header.Get("Refresh") != itoa(int64(refresh)) {
		t.Errorf("Refresh header %q, refreshIntervalSeconds %v: want the same", res.header.Get("Refresh"), refresh)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", room["lastUpdated"].(string)); err != nil {
		t.Errorf("lastUpdated %v: %v", room["lastUpdated"], err)
	}
	// Without Accept: application/json, the page.
	if res := h.get(newVisitor(), "/"); !strings.Contains(res.body, "<html") {
		t.Errorf("without Accept: application/json: %s", res.body)
	}
	// A room without JSON enabled answers HTML even to JSON clients.
	h2 := newHarness(t, admit.Settings{Name: "site", TotalActiveUsers: 1, NewUsersPerMinute: 1})
	h2.get(newVisitor(), "/")
	if res := h2.get(newVisitor(), "/", "Accept", "application/json"); res.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("json_response_enabled off: %v", res.header)
	}
}

// Every template variable "Waiting Room: Random Queueing and Custom
// Web/Mobile Apps" lists reaches a custom Mustache page, with the values the
// JSON answer gives, HTML-escaped where Mustache escapes; sections work on
// the booleans.
func TestCustomPage(t *testing.T) {
	vars := []string{"waitTime", "waitTimeKnown", "waitTime25Percentile", "waitTime50Percentile", "waitTime75Percentile",
		"waitTimeFormatted", "queueIsFull", "queueAll", "lastUpdated", "refreshIntervalSeconds", "queueingMethod",
		"isFIFOQueue", "isRandomQueue"}
	page := "<ul>"
	for _, v := range vars {
		page += "<li>" + v + "=[{{" + v + "}}]</li>"
	}
	page += "</ul>{{#isRandomQueue}}<p>random</p>{{/isRandomQueue}}{{^isFIFOQueue}}<p>not fifo</p>{{/isFIFOQueue}}"
	for _, method := range []admit.QueueingMethod{admit.FIFO, admit.Random} {
		h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 1, CustomPageHTML: page,
			QueueingMethod: method, JSONResponseEnabled: true, QueueingStatusCode: 429})
		h.get(newVisitor(), "/")
		v := newVisitor()
		res := h.get(v, "/")
		if res.status != 429 || res.fromOrigin() {
			t.Fatalf("%s room: the queued visitor got %d %s", method, res.status, res.body)
		}
		asJSON := h.get(v.clone(), "/", "Accept", "application/json")
		var doc map[string]map[string]any
		if err := json.Unmarshal([]byte(asJSON.body), &doc); err != nil {
			t.Fatal(err)
		}
		for _, name := range vars {
			want := fmt.Sprint(doc["cfWaitingRoom"][name])
			if !strings.Contains(res.body, "<li>"+name+"=["+html.EscapeString(want)+"]</li>") {
				t.Errorf("%s room: the page's %s is not the JSON's %q:\n%s", method, name, want, res.body)
			}
		}
		random := method == admit.Random
		if strings.Contains(res.body, "<p>random</p>") != random || strings.Contains(res.body, "<p>not fifo</p>") != random {
			t.Errorf("%s room: sections on isRandomQueue / isFIFOQueue wrong:\n%s", method, res.body)
		}
	}
}

func TestClosedRoom(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", QueueingMethod: admit.Reject, QueueingStatusCode: 202})
	res := h.get(newVisitor(), "/")
	if res.status != 202 || !strings.Contains(res.body, "closed for now") {
		t.Errorf("reject: %d %s", res.status, res.body)
	}
}

func TestHeadOfQueuePageHasNoBody(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 1})
	h.get(newVisitor(), "/")
	req := httptest.NewRequest(http.MethodHead, "/", nil)
	if res := h.do(newVisitor(), req); res.body != "" || res.status != 200 {
		t.Errorf("HEAD: %d %q", res.status, res.body)
	}
}
