package plan_test

import (
	"testing"

	"github.com/edgeflow/edgeflow/internal/publish/plan"
)

func TestBatchWindow(t *testing.T) {
	for _, tt := range []struct{ requested, want int }{
		{0, plan.DefaultBatchesInFlight}, {-1, plan.DefaultBatchesInFlight},
		{1, 1}, {6, 6}, {plan.MaxBatchesInFlight + 1, plan.MaxBatchesInFlight},
	} {
		if got := plan.BatchWindow(tt.requested); got != tt.want {
			t.Errorf("BatchWindow(%d) = %d, want %d", tt.requested, got, tt.want)
		}
	}
}

func TestBatchesToStart(t *testing.T) {
	for _, tt := range []struct{ window, started, done, total, want int }{
		{2, 0, 0, 40, 2},   // a fresh version fills its window
		{2, 2, 0, 40, 0},   // full: nothing until a batch reports
		{2, 2, 1, 40, 1},   // one reported: one more
		{2, 5, 5, 40, 2},   // several reported out of order
		{2, 39, 38, 40, 1}, // never past the last batch
		{2, 40, 39, 40, 0},
		{500, 0, 0, 1, 1},
	} {
		if got := plan.BatchesToStart(tt.window, tt.started, tt.done, tt.total); got != tt.want {
			t.Errorf("BatchesToStart(window %d, started %d, done %d, total %d) = %d, want %d",
				tt.window, tt.started, tt.done, tt.total, got, tt.want)
		}
	}
}

// A pool of four slots matched first come, first served, as Temporal matches
// a task queue's tasks: a 40-batch release arrives, then a one-batch release
// while the big one's batches run. With the default window the small batch
// gets a slot at once; with every batch in flight (the old window, 500) it
// waited behind all of the big release's queued batches.
func TestSmallReleaseFindsASlotBesideABigOne(t *testing.T) {
	for _, tt := range []struct {
		name     string
		window   int
		maxQueue int // batch durations the small release may wait
	}{
		{"default", plan.BatchWindow(0), 0},
		{"one run's own bound at the pool's size", 4, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if waited := smallReleaseWait(tt.window, 4, 40); waited > tt.maxQueue {
				t.Errorf("window %d: the small release's batch waited %d batch durations for a slot, want at most %d", tt.window, waited, tt.maxQueue)
			}
		})
	}
	if waited := smallReleaseWait(plan.MaxBatchesInFlight, 4, 40); waited < 9 {
		t.Errorf("bad test: with every batch in flight the small release waited only %d batch durations", waited)
	}
}

// smallReleaseWait simulates a FIFO pool of slots, every batch taking one
// step: a big release of total batches starts with window in flight (then
// one more as each reports, which reaches the queue after a report), and a
// one-batch release is queued at step 1. It returns how many steps the small
// batch waited in the queue.
func smallReleaseWait(window, slots, total int) int {
	const small = -1
	var queue []int
	started, done, running := 0, 0, 0
	issue := func() {
		for n := plan.BatchesToStart(window, started, done, total); n > 0; n-- {
			queue = append(queue, started)
			started++
		}
	}
	issue()
	queuedAt := -1
	for step := 0; ; step++ {
		if step == 1 {
			queue = append(queue, small)
			queuedAt = step
		}
		// Match the queue's head to free slots.
		for running < slots && len(queue) > 0 {
			b := queue[0]
			queue = queue[1:]
			if b == small {
				return step - queuedAt
			}
			running++
		}
		// Every running batch finishes within the step; the refills come after.
		done += running
		running = 0
		issue()
	}
}
