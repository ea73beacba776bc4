package admit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// A room whose state cannot be trimmed under what a run may carry to the
// next fails, saying so, rather than continue as new with an input
// Temporal refuses (it terminates the workflow: the room silently ends).
func TestRoomTooLargeToContinueFailsLoudly(t *testing.T) {
	rt := newRoomTest(t)
	r, err := engine.NewRoom(engine.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10}, 0, minute(44))
	if err != nil {
		t.Fatal(err)
	}
	// Nothing trims a refusal's text: it stands for whatever cannot go.
	st := contract.RoomState{Room: *r, Stats: contract.RoomStats{LastRefusal: strings.Repeat("x", 2*contract.MaxContinueBytes)}}
	in := contract.RoomInput{Settings: r.Settings, State: &st, HistoryBudget: 60}
	rt.at(time.Minute, func() { rt.env.SetCurrentHistoryLength(61) })
	rt.env.ExecuteWorkflow(contract.WorkflowTypeRoom, in)
	err = rt.env.GetWorkflowError()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != contract.ErrRoomStateTooLarge || !app.NonRetryable() ||
		!strings.Contains(app.Message(), "room shop") || !strings.Contains(app.Message(), "continue as new") {
		t.Fatalf("workflow ended with %v, want a non-retryable %s naming the room", err, contract.ErrRoomStateTooLarge)
	}
}
