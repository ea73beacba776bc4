package replaytest

import (
	"os"
	"testing"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// Load reads a history as WriteHistory writes it.
func Load(t testing.TB, path string) *historypb.History {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read-only
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return hist
}

// WorkflowType is the type of the workflow a history is of.
func WorkflowType(events []*historypb.HistoryEvent) string {
	if len(events) == 0 {
		return ""
	}
	return events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
}

// ContinuedAsNew reads a run that continued as new: it decodes the input
// the run continued with into next, and checks that every child workflow
// the run initiated had started (so that what the child reports reaches
// the next run). It returns how many children the run initiated.
func ContinuedAsNew(t testing.TB, hist *historypb.History, next any) (initiated int) {
	t.Helper()
	started, continued := 0, false
	for _, ev := range hist.GetEvents() {
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			initiated++
		case enums.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
			started++
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			continued = true
			in := ev.GetWorkflowExecutionContinuedAsNewEventAttributes().GetInput()
			if err := converter.GetDefaultDataConverter().FromPayloads(in, next); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !continued {
		t.Fatal("the run did not continue as new")
	}
	if initiated == 0 || started != initiated {
		t.Errorf("%d children initiated, %d started before continuing as new", initiated, started)
	}
	return initiated
}
