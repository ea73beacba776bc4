package publish

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/heartbeat"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// followPageLimit bounds the changes one request to the feed asks for.
const followPageLimit = 1000

// catalogTTL is how long the follower's map of the catalog's npm targets is
// reused before the catalog is read again.
const catalogTTL = 30 * time.Second

// FollowRegistry long-polls the registry's changes feed from in.Since for
// up to in.Wait and returns the new sequence and the catalog packages that
// changed. It returns as soon as a page holds a catalog package; changes
// of other packages only move the sequence on. At most
// contract.MaxFollowNames packages are returned: a page with more stops at
// the change that reached the bound, and the next poll resumes there. The
// catalog is read here, never sent through history.
func (a *Publish) FollowRegistry(ctx context.Context, in contract.FollowInput) (*contract.FollowResult, error) {
	if in.Registry != contract.RegistryNPM {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("registry %q: only %q has a changes feed", in.Registry, contract.RegistryNPM), contract.ErrInvalidPackage, nil)
	}
	if a.Changes == nil {
		return nil, temporal.NewNonRetryableApplicationError("no changes feed configured on the worker (NPM_CHANGES_URL)", contract.ErrInvalidPackage, nil)
	}
	targets, err := a.npmTargets()
	if err != nil {
		return nil, err
	}
	// The follower's heartbeat timeout is 10 s: a dead worker's poll is
	// given up that soon.
	defer heartbeat.Every(ctx, 3*time.Second, nil)()
	deadline := time.Now().Add(in.Wait)
	res := &contract.FollowResult{LastSeq: in.Since}
	var names []string
	for {
		page, err := a.Changes.Poll(ctx, res.LastSeq, max(time.Until(deadline), 0), followPageLimit)
		a.metrics.poll(in.Registry, err)
		if err != nil {
			return nil, err
		}
		answered := a.now()
		full := false
		for _, change := range page.Results {
			var fresh []string
			for _, name := range targets[change.ID] {
				if !slices.Contains(names, name) {
					fresh = append(fresh, name)
				}
			}
			if len(names) > 0 && len(names)+len(fresh) > contract.MaxFollowNames {
				full = true
				break
			}
			names = append(names, fresh...)
			res.Changes++
			res.LastSeq = change.Seq
		}
		if !full {
			res.LastSeq = page.LastSeq
		}
		if !full && len(page.Results) < followPageLimit {
			// Nothing left behind: every change until the answer is seen.
			res.CaughtUpAt = answered
			a.metrics.caughtUp(in.Registry, answered)
		}
		if len(names) > 0 || time.Now().After(deadline) {
			break
		}
		if len(page.Results) == 0 {
			// A feed that answers at once with nothing (no long-poll) is
			// asked again a second later, not in a loop.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(min(time.Second, max(time.Until(deadline), 0))):
			}
		}
	}
	slices.Sort(names)
	res.Names = names
	return res, nil
}

// npmTargets maps each npm package the catalog follows to the catalog
// entries that follow it (usually one), read again every catalogTTL.
func (a *Publish) npmTargets() (map[string][]string, error) {
	if a.CatalogDir == "" {
		return nil, temporal.NewNonRetryableApplicationError("no catalog configured on the worker (CATALOG_DIR)", contract.ErrInvalidPackage, nil)
	}
	v, _ := targetCache.LoadOrStore(a.CatalogDir, &catalogTargets{})
	cache := v.(*catalogTargets)
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if cache.byName != nil && time.Since(cache.read) < catalogTTL {
		return cache.byName, nil
	}
	// Entries that do not load are left out: the Schedule's check reports them.
	pkgs, _ := catalog.Load(a.CatalogDir)
	if len(pkgs) == 0 {
		if _, err := catalog.Names(a.CatalogDir); err != nil {
			return nil, err
		}
	}
	byName := map[string][]string{}
	for _, p := range pkgs {
		if p.Updatable() && p.Autoupdate.Source == catalog.SourceNPM {
			byName[p.Autoupdate.Target] = append(byName[p.Autoupdate.Target], p.Name)
		}
	}
	cache.byName, cache.read = byName, time.Now()
	return byName, nil
}

// targetCache holds npmTargets' map per catalog directory.
var targetCache sync.Map

// catalogTargets caches npmTargets.
type catalogTargets struct {
	mu     sync.Mutex
	byName map[string][]string
	read   time.Time
}
