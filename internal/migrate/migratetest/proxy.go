// Package migratetest helps Migrate's tests watch a real store: a proxy in
// front of MinIO that counts the writes each key receives (so a test can
// prove nothing is written twice) and can answer with SlowDown for a while.
package migratetest

import (
	"github.com/edgeflow/edgeflow/internal/faultproxy"
	"github.com/edgeflow/edgeflow/internal/migrate"
)

// Proxy forwards S3 requests to a MinIO, keeping the Host header (which the
// request signature covers), and records every write that succeeded. It is
// a faultproxy.Proxy with no drawn faults, so the counting of writes is the
// one the chaos suite relies on.
type Proxy struct {
	// Endpoint is the proxy's host:port: give it to the client under test.
	Endpoint string
	fp       *faultproxy.Proxy
}

// NewProxy starts a proxy in front of the MinIO at endpoint.
func NewProxy(endpoint string) *Proxy {
	fp := faultproxy.New(endpoint, faultproxy.Faults{}, 0)
	return &Proxy{Endpoint: fp.Endpoint, fp: fp}
}

// Writes returns how often each bucket/key was written, less the
// precheck's probe (migrate.WithoutProbes).
func (p *Proxy) Writes() map[string]int { return migrate.WithoutProbes(p.fp.Writes()) }

// Unconfirmed returns how many writes of each bucket/key reached the store
// without its 200 (see faultproxy.Proxy.Unconfirmed), less the probe's.
func (p *Proxy) Unconfirmed() map[string]int { return migrate.WithoutProbes(p.fp.Unconfirmed()) }

// ResetWrites forgets the writes seen so far.
func (p *Proxy) ResetWrites() { p.fp.ResetWrites() }

// Throttle answers every other one of the next n requests with 503
// SlowDown: a store under pressure, where a retry after a pause succeeds.
func (p *Proxy) Throttle(n int) { p.fp.Throttle(n) }

// Throttled is how many requests were answered with SlowDown.
func (p *Proxy) Throttled() int { return int(p.fp.Counts().SlowDowns) }

// Close stops the proxy.
func (p *Proxy) Close() { p.fp.Close() }

// Batches is how many batch writes (archives of objects) the store accepted.
func (p *Proxy) Batches() int { return int(p.fp.Counts().Batches) }
