package plan

// DefaultBatchesInFlight is how many of one version's batches are on the
// compress pool at a time unless the run asks for another bound. Two keep a
// big release going at about full speed (a batch runs its files on every core
// of its process, IOParallel at a time, so two overlap each other's ends and
// I/O) while a pool of four slots or more (a compress process has two per
// core) always has one free for the next release: batches are matched first
// come, first served, so a 1,000-file release's 40 batches queued at once
// made every small release behind them wait for all of them (issue #37).
const DefaultBatchesInFlight = 2

// MaxBatchesInFlight bounds a run's own request, well under Temporal's 2,000
// pending children per workflow; it was every version's window before.
const MaxBatchesInFlight = 500

// BatchWindow is how many of a version's batches may be in flight at once:
// requested (the run's MaxPendingBatches) when it asks for a bound, at most
// MaxBatchesInFlight, else DefaultBatchesInFlight.
func BatchWindow(requested int) int {
	if requested <= 0 {
		return DefaultBatchesInFlight
	}
	return min(requested, MaxBatchesInFlight)
}

// BatchesToStart is how many more batches a version starts now, as a sliding
// window: with started of total batches started and done of them reported,
// enough to have window in flight, never past the last batch.
func BatchesToStart(window, started, done, total int) int {
	return max(0, min(window-(started-done), total-started))
}
