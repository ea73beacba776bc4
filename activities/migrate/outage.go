package migrate

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// storeDown turns a page stopped by a store outage into an
// ErrStoreUnavailable the job waits on (Temporal's retries would give up
// after a while; the job's wait has no end but an abort). Other errors
// pass as they are.
func (a *Activities) storeDown(execution string, err error) error {
	var down *migrate.StoreDownError
	if !errors.As(err, &down) {
		return err
	}
	a.Metrics.storeWaiting(down.Side)
	return temporal.NewNonRetryableApplicationError(down.Error(), contract.ErrStoreUnavailable, nil,
		contract.StoreDown{Execution: execution, Side: down.Side, Reason: down.Reason})
}

// listingFailed says whether a failed listing is the source's outage: a
// refused connection, a reset, timeout or 5xx (the listing is one request
// for the whole store, so one is enough), or a 403 the probe confirms.
func (a *Activities) listingFailed(ctx context.Context, in contract.ListInput, src *storeHandle, err error) error {
	switch migrate.ClassifyStoreError(err) {
	case migrate.Unreachable, migrate.StoreFailure:
	case migrate.Denied:
		perr := migrate.Probe(ctx, migrate.SideSource, src.Store, in.Source.Location, in.Job)
		if perr == nil {
			return err // the store works: a verdict on the listing, not an outage
		}
		err = perr
	default:
		return err
	}
	return a.storeDown(in.Execution, &migrate.StoreDownError{Outage: migrate.Outage{Side: migrate.SideSource, Reason: "listing: " + err.Error()}})
}

// ProbeStore checks one side of a job with the precheck's requests, once:
// nil when the store is back. The job calls it with backoff while it waits.
func (a *Activities) ProbeStore(ctx context.Context, in contract.ProbeInput) error {
	defer beat(ctx)()
	st, err := a.store(in.Job, in.Side, in.Endpoint)
	if err != nil {
		return err
	}
	if err := migrate.Probe(ctx, in.Side, st.Store, in.Endpoint.Location, in.Job); err != nil {
		a.Metrics.storeWaiting(in.Side)
		return err
	}
	a.Metrics.storeUp(in.Side)
	return nil
}
