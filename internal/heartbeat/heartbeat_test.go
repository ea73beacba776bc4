package heartbeat_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/edgeflow/edgeflow/internal/heartbeat"
)

// beats runs fn as an activity, passing it the channel its heartbeats'
// details arrive on (-1 for a heartbeat without details). The SDK
// throttles heartbeats after the first, so tests look at the first.
func beats(t *testing.T, fn func(ctx context.Context, seen <-chan int) error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	seen := make(chan int, 100)
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		n := -1
		if details.HasValues() {
			_ = details.Get(&n)
		}
		select {
		case seen <- n:
		default:
		}
	})
	env.RegisterActivityWithOptions(func(ctx context.Context) error { return fn(ctx, seen) }, activity.RegisterOptions{Name: "Beat"})
	if _, err := env.ExecuteActivity("Beat"); err != nil {
		t.Fatal(err)
	}
}

// The first heartbeat comes at once, not an interval later: with an hour's
// interval the activity still sees one.
func TestEveryBeatsAtOnce(t *testing.T) {
	beats(t, func(ctx context.Context, seen <-chan int) error {
		stop := heartbeat.Every(ctx, time.Hour, nil)
		defer stop()
		if n := <-seen; n != -1 {
			t.Errorf("a heartbeat without details carried %d", n)
		}
		return nil
	})
}

// A heartbeat carries what details says, so a retry can resume from it.
func TestEveryCarriesDetails(t *testing.T) {
	beats(t, func(ctx context.Context, seen <-chan int) error {
		stop := heartbeat.Every(ctx, time.Hour, func() any { return 7 })
		defer stop()
		if n := <-seen; n != 7 {
			t.Errorf("the heartbeat carried %d, want 7", n)
		}
		return nil
	})
}

func TestWithinBeatsThreeTimesPerTimeout(t *testing.T) {
	if got := heartbeat.Within(time.Minute); got != 20*time.Second {
		t.Errorf("Within(1m) = %v", got)
	}
	if got := heartbeat.Within(0); got != 100*time.Millisecond {
		t.Errorf("Within(0) = %v, want the 100ms floor", got)
	}
}
