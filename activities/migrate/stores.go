package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/gcs"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// storeHandle is a store of one side of a job and its cache key.
type storeHandle struct {
	objectstore.Store
	id string // endpoint and credentials fingerprint, never the secret
}

// stores keeps one client per endpoint and credentials for the life of the
// worker, so every page reuses warm connections, and one concurrency
// controller per pair of stores, shared by every page between them, so
// throttling seen by one page slows all of them.
type stores struct {
	mu          sync.Mutex
	clients     map[string]objectstore.Store
	controllers map[string]*migrate.Controller
	// verdicts remember, per destination store, the buckets that keep
	// batch archives whole, so only a worker's first page to one probes.
	verdicts map[string]*migrate.BatchVerdicts
}

// batchVerdicts are the destination store's.
func (s *stores) batchVerdicts(dst *storeHandle) *migrate.BatchVerdicts {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.verdicts[dst.id]
	if !ok {
		if s.verdicts == nil {
			s.verdicts = map[string]*migrate.BatchVerdicts{}
		}
		v = &migrate.BatchVerdicts{}
		s.verdicts[dst.id] = v
	}
	return v
}

func (a *Activities) sides(job string, src, dst contract.Endpoint) (*storeHandle, *storeHandle, error) {
	s, err := a.store(job, migrate.SideSource, src)
	if err != nil {
		return nil, nil, err
	}
	d, err := a.store(job, migrate.SideDest, dst)
	if err != nil {
		return nil, nil, err
	}
	return s, d, nil
}

// store opens one side's sealed credentials and returns its client.
// Credentials that do not open fail for good: retrying cannot help.
func (a *Activities) store(job, side string, e contract.Endpoint) (*storeHandle, error) {
	// Sealed to the side's store: an input that names another store is
	// refused here, before any request is made.
	creds, err := e.Credentials.Open(a.Keys, job, side, e.Store())
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrPermanent, nil)
	}
	sum := sha256.Sum256([]byte(creds.AccessKey + "\x00" + creds.SecretKey + "\x00" + creds.SessionToken + "\x00" + creds.GCSKey))
	id := fmt.Sprintf("%s|%v|%s|%s|%s", e.Endpoint, e.Secure, e.Region, strings.Join(e.Pinned, ","), hex.EncodeToString(sum[:8]))
	if e.Provider == migrate.ProviderGCS {
		id = "gs|" + hex.EncodeToString(sum[:8])
	}
	a.stores.mu.Lock()
	defer a.stores.mu.Unlock()
	if c, ok := a.stores.clients[id]; ok {
		return &storeHandle{Store: c, id: id}, nil
	}
	var c objectstore.Store
	if e.Provider == migrate.ProviderGCS {
		// No key sealed: the worker's application default credentials.
		c, err = gcs.New(context.Background(), []byte(creds.GCSKey))
	} else {
		c, err = s3.New(s3.Config{Endpoint: e.Endpoint, AccessKey: creds.AccessKey, SecretKey: creds.SecretKey,
			SessionToken: creds.SessionToken, Secure: e.Secure, Region: e.Region, Pinned: e.Pinned,
			// Transfers retry themselves, with backoff, and see throttling.
			MaxRetries: 1})
	}
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s %s: %v", side, e, err), contract.ErrPermanent, nil)
	}
	if a.stores.clients == nil {
		a.stores.clients = map[string]objectstore.Store{}
	}
	a.stores.clients[id] = c
	return &storeHandle{Store: c, id: id}, nil
}

// controller is the concurrency controller between two stores, its
// ceiling set to the job's concurrency.
func (s *stores) controller(src, dst *storeHandle, ceiling int) *migrate.Controller {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := src.id + "→" + dst.id
	c, ok := s.controllers[key]
	if !ok {
		if s.controllers == nil {
			s.controllers = map[string]*migrate.Controller{}
		}
		c = migrate.NewController(ceiling)
		s.controllers[key] = c
	}
	c.SetMax(ceiling)
	return c
}
