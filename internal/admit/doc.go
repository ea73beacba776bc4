// Package admit is the waiting room's admission engine, in plain Go: the
// room settings, the visitor's ticket, the per-request decision, the slot
// allocation across data centers and gates, the wait estimates, and the
// per-minute rollup that turns the gates' reports into the next snapshot.
// It reads no clock, draws no random number and does no I/O of its own, so
// the gate (cmd/gate), the room workflow (workflows/admit) and the
// simulator (cmd/simulate) all drive exactly this code.
//
// # The model
//
// It is Cloudflare Waiting Room's, as two of Cloudflare's blog posts
// describe it, cited in this package by their titles' first words:
// "Waiting Room: Random Queueing and Custom Web/Mobile Apps" (the queueing
// methods, the cookie, reserved slots, the JSON response and template
// variables) and "How Waiting Room makes queueing decisions on Cloudflare's
// highly distributed network" (allocation across data centers, the adaptive
// split, the shared data center counters).
//
// A room has two limits: total_active_users (sessions at once) and
// new_users_per_minute. Each minute the room may admit
//
//	slots = min(total_active_users - activeUsers, new_users_per_minute)
//
// FIFO reserves those slots for the queued minute buckets, oldest first
// (Reserve); new visitors get what the reservations leave. Random treats
// everyone as new but keeps the buckets and reservations, so switching back
// to FIFO restores everyone's place. Each pool of slots is split between
// data centers by their share of the previous minute's traffic (as a share
// of the limit), rounded down, and the rest is the Anywhere scope (Split).
//
// # Who calls what
//
// The room (the workflow, or the simulator) keeps a Room:
//
//	r, err := admit.NewRoom(settings, 60, now)   // publishes the first snapshot at once
//	r.AddReport(report, now)                     // each gate report (signal)
//	r.Advance(now)                               // at r.NextWake(now): the next minute's snapshot
//	r.SetSettings(s, version, now)               // after r.CheckSettings (the update's validator)
//	r.AddEvent / r.CancelEvent                   // scheduled events
//
// and publishes r.Snapshot. A gate caches the Snapshot and decides each
// request locally:
//
//	d, err := admit.Decide(ctx, admit.Input{Now: now, Snapshot: snap, Ticket: ticket,
//		Gate: admit.Gate{DataCenter: "ams", ID: "ams-1"}, Strategy: strategy, Entropy: rand.Uint64()})
//	tally.Add(d.Effect)          // and send tally.Pending() to the room every few seconds
//	if d.SetTicket { seal d.Ticket into the cookie }
//
// Decide needs a Strategy, which holds the counters: SharedCounters (the
// counters Cloudflare uses now), EvenSplit and Adaptive (its two older ones),
// on any Counter — MemoryCounter here, Redis in the gate (ScopeStores keeps
// the Anywhere scope on a store all data centers share). Fallback combines
// two (counters, falling back to the even split while the counter store is
// unreachable). BorrowingCounters is SharedCounters plus a fix the simulator
// measured: late in a minute it lends a data center's unused share to the
// others, for when traffic moves between data centers.
//
// # Between minutes
//
// The room publishes minute M's snapshot a short grace after M starts, once
// the gates' last reports of M-1 are in. Until a gate has it, the gate keeps
// deciding on M-1's snapshot but spends, on M's counters, only a quarter of
// what M-1's new visitors' pool had left (its scopes' limits minus what the
// counters of M-1 took); the room gives those scopes of M at least that
// remainder (Allocate's Carry), so propagation delays never overshoot.
// Buckets' reservations are not spent on a stale snapshot: their visitors
// are queued already and wait the seconds until M's snapshot arrives, and no
// slot of M is held back for a bucket that M-1 served. Nothing at all is
// spent on M-1's snapshot once M+1 has begun: the room's floors cover only
// the minute after a snapshot's, so a gate whose read of M's snapshot is
// that late queues new visitors until it has a newer one. A gate whose snapshot is older than
// its maximum age (snapshot_max_age_seconds) queues every new visitor, while
// admitted sessions still pass.
//
// # Counting sessions
//
// A ticket's session runs from its last check-in (or from its admission when
// renewal is disabled). Gates report admissions and the moves of sessions
// from one minute to a later one; the room counts as active the sessions
// whose minute lies within the last session_duration minutes (Ledger). A
// visitor's session moves at most once a minute, from the minute it was
// last counted in, however many copies of its cookie arrive (Visits: per
// gate in memory; across the gates of a room through their shared store,
// settled by each gate's reporter in the background). A
// queued visitor is counted once per minute, at its first check-in in it,
// so the waiting counts are exact when every queued visitor checks in each
// minute (RefreshBase keeps the jittered interval under a minute). A
// request without a ticket counts no one waiting: its ticket (Fresh) counts
// when it comes back with it, a second later in a FIFO room. A random
// room that queues gives a new visitor no try at its first request: its
// first is a refresh interval later, like everyone's next, so dropping the
// cookie buys nothing.
package admit
