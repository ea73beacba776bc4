// Package gate is the waiting room's gate: the reverse proxy in front of an
// origin that decides every request locally, with the engine in
// internal/admit, on the latest snapshot of the room that covers it.
//
// Its parts, by file:
//
//   - The proxy (gate.go, serve.go, proxy.go, routes.go): Gate is an
//     http.Handler. ServeHTTP screens a request (body limit, the hosts the
//     gate serves, a canonical path), judges who the visitor is, decides
//     and counts, seals the visitor's cookie and responds: the origin's
//     answer through an httputil.ReverseProxy, whose response hook also
//     takes the origin's revoke command (RevokeHeader), or the waiting
//     room.
//   - The cookie (cookie.go, renewals.go): the visitor's ticket sealed
//     with the gates' shared keys (internal/keyring), so that any gate
//     opens it and no visitor can forge or read it; a renewal is sealed
//     once per cookie sent and renewal interval.
//   - The counters (counters.go, redis.go, sessions.go, redisfields.go):
//     the slots the engine takes, in this process or on Redis (a data
//     center's and the Anywhere Redis), failing over to this gate's even
//     split while Redis does not answer, and the session ledger on Redis.
//     Values gates read back from Redis as another gate's are signed.
//   - The aggregation and the reports (report.go, aggregate.go,
//     aggregate_lease.go): the gate's per-minute counts go to the room
//     workflow, or through the data center's Redis to the one gate holding
//     its lease, which sends the room one report per data center.
//   - The revocations (revocations.go): sessions the origin ended, held in
//     memory so an admitted visitor never waits on Redis, shared with the
//     room's other gates through a Redis stream.
//   - The responses (respond.go, page.html.mustache): the queue page (the
//     room's own, bounded in size and render time, or the default one) or
//     Cloudflare Waiting Room's JSON object.
//   - The rooms (rooms.go, watch.go, watch_ended.go): the Registry of rooms
//     a gate knows, kept current from Temporal by a Watcher.
//   - What it tells (status.go, metrics.go): the status document and
//     health endpoints, and the Prometheus metrics.
//
// The package does no wiring of its own: internal/admit/gatehost builds a
// gate process from it (Temporal, Redis, the cookie keys, tracing, the
// health server), and cmd/gate holds only the flags.
package gate
