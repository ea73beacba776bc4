package console

import (
	"bytes"
	"net/http"

	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// syncRequest is POST /api/v1/migrations/{job}/sync's body: what the run
// does, and nothing of where. The stores, their pinned addresses and
// sealed credentials are the finished job's, read from its history, never
// the caller's; a body naming any other field is refused.
type syncRequest struct {
	DeleteExtraneous bool `json:"deleteExtraneous"`
}

// startedSync is the answer to a sync: its report so far and its run.
type startedSync struct {
	contract.SyncReport
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
}

// syncRoutes are a job's syncs: one now, and the history.
func (a migrationAPI) syncRoutes() []route {
	return []route{
		{"POST /api/v1/migrations/{job}/sync", a.sync},
		{"GET /api/v1/migrations/{job}/syncs", a.syncs},
	}
}

// sync starts one sync run of a finished job and answers at once (202);
// GET .../syncs and the run's workflow say how it ends.
func (a migrationAPI) sync(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	job, err := jobName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	body, berr := readBody(w, r)
	if berr != nil {
		return 0, nil, nil, berr
	}
	var req syncRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			return 0, nil, nil, err
		}
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	base, err := jobclient.SyncBase(ctx, a.tc, job)
	if err != nil {
		return 0, nil, nil, err
	}
	run, err := jobclient.StartSync(ctx, a.tc, base, contract.SyncRun{DeleteExtraneous: req.DeleteExtraneous})
	if err != nil {
		return 0, nil, nil, err
	}
	st := contract.Status{Job: job, State: contract.StateQueued, Account: base.Account,
		Sync: &contract.SyncInfo{WorkflowID: run.GetID(), SyncRun: contract.SyncRun{DeleteExtraneous: req.DeleteExtraneous}}}
	w.Header().Set("Location", "/api/v1/migrations/"+job+"/syncs")
	return http.StatusAccepted, startedSync{contract.SyncReportOf(st), run.GetID(), run.GetRunID()}, nil, nil
}

// maxSyncRows bounds the sync history an answer lists.
const maxSyncRows = 50

func (a migrationAPI) syncs(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	job, err := jobName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	h, err := jobclient.Syncs(ctx, a.tc, job, maxSyncRows)
	if err != nil {
		return 0, nil, nil, err
	}
	return http.StatusOK, h, nil, nil
}
