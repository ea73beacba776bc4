package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	acts "github.com/edgeflow/edgeflow/activities/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// a names the activities for mocking by function.
var a *acts.Activities

// bucket fakes a source of Objects objects listed PageSize at a time; a
// page fails the objects in failing (dead letters) until they are redriven.
type bucket struct {
	mu        sync.Mutex
	objects   int
	pageSize  int
	listed    []int // seqs listed, in call order
	sizes     []int // the page size each listing asked for, in call order
	transfers []contract.PageInput
	failing   map[int]int // seq → objects that fail in it
	// block, when set, holds TransferPage of pages from blockFrom on until
	// it is closed or the transfer is cancelled.
	block     chan struct{}
	blockFrom int
	// listBlock, when set, holds ListPage of pages from listBlockFrom on
	// until it is closed.
	listBlock     chan struct{}
	listBlockFrom int
	started       chan int // seqs of transfers started, when set
	found         map[int]contract.PageReport
	findSeen      [][]int
	asked         int // slot requests
	archived      []contract.Status
	// down: a page's transfer (by seq) finds the destination down this many
	// times; listDown: the listing of a page finds the source down so;
	// probeFails: the next probes fail; probes: the probes made.
	down       map[int]int
	listDown   map[int]int
	probeFails int
	probes     []contract.ProbeInput
	// afters are the After of each bounded listing (a sync's), in call
	// order; differ plants what a cutover's page finds different.
	afters []string
	differ map[int][]migrate.Difference
}

func unavailable(side string) error {
	return temporal.NewNonRetryableApplicationError("the "+side+" store is unavailable", contract.ErrStoreUnavailable, nil,
		contract.StoreDown{Side: side, Reason: "connection refused"})
}

func (b *bucket) pages() int { return (b.objects + b.pageSize - 1) / b.pageSize }

func (b *bucket) pageCount(seq int) int { return min(b.pageSize, b.objects-seq*b.pageSize) }

func (b *bucket) mock(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	acts.Register(env, &acts.Activities{})
	env.OnActivity(a.RequestSlot, mock.Anything, mock.Anything, mock.Anything).Return(func(ctx context.Context, account string, req contract.SlotRequest) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.asked++
		return nil
	})
	env.OnActivity(a.Precheck, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.ListPage, mock.Anything, mock.Anything).Return(func(ctx context.Context, in contract.ListInput) (contract.ListResult, error) {
		if b.listBlock != nil && in.Seq >= b.listBlockFrom {
			<-b.listBlock
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.listDown[in.Seq] > 0 {
			b.listDown[in.Seq]--
			return contract.ListResult{}, unavailable(migrate.SideSource)
		}
		b.listed = append(b.listed, in.Seq)
		b.sizes = append(b.sizes, in.PageSize)
		want := ""
		if in.Seq > 0 {
			want = fmt.Sprintf("token-%d", in.Seq)
		}
		if in.Token != want {
			return contract.ListResult{}, fmt.Errorf("page %d listed with token %q, want %q", in.Seq, in.Token, want)
		}
		res := contract.ListResult{Seq: in.Seq, Count: b.pageCount(in.Seq), Bytes: int64(b.pageCount(in.Seq)) * 10}
		if in.Seq+1 < b.pages() {
			res.Next = fmt.Sprintf("token-%d", in.Seq+1)
		} else {
			res.Last = true
		}
		if in.Bounded {
			b.afters = append(b.afters, in.After)
			if res.Count > 0 {
				res.LastKey = fmt.Sprintf("key-%d", in.Seq*b.pageSize+res.Count-1)
			}
			res.Stored = res.Count > 0 || res.Last
		}
		return res, nil
	})
	env.OnActivity(a.TransferPage, mock.Anything, mock.Anything).Return(func(ctx context.Context, in contract.PageInput) (contract.PageReport, error) {
		b.mu.Lock()
		b.transfers = append(b.transfers, in)
		block, started := b.block, b.started
		if b.down[in.Seq] > 0 {
			b.down[in.Seq]--
			b.mu.Unlock()
			return contract.PageReport{}, unavailable(migrate.SideDest)
		}
		b.mu.Unlock()
		if started != nil {
			started <- in.Seq
		}
		if block != nil && in.Seq >= b.blockFrom {
			select {
			case <-block:
			case <-ctx.Done():
				return contract.PageReport{}, temporal.NewCanceledError(contract.PageReport{Execution: in.Execution, Seq: in.Seq, Item: in.Item, Aborted: true,
					Counters: migrate.Counters{Copied: 1, Bytes: 10}})
			}
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		rep := contract.PageReport{Execution: in.Execution, Pass: in.Pass, Seq: in.Seq, Item: in.Item}
		if in.Pass > 0 {
			rep.Redriven = b.failing[in.Seq]
			rep.Counters = migrate.Counters{Copied: int64(rep.Redriven), Bytes: int64(rep.Redriven) * 10}
			delete(b.failing, in.Seq)
			return rep, nil
		}
		n := b.pageCount(in.Seq)
		failed := b.failing[in.Seq]
		rep.Counters = migrate.Counters{Copied: int64(n - failed), Failed: int64(failed), Bytes: int64(n-failed) * 10}
		if in.Sync != nil && in.Sync.Cutover {
			rep.Counters.Verified = int64(n - failed)
			rep.Differences = b.differ[in.Seq]
			rep.Counters.Extraneous = int64(len(b.differ[in.Seq]))
		}
		return rep, nil
	})
	env.OnActivity(a.ProbeStore, mock.Anything, mock.Anything).Return(func(ctx context.Context, in contract.ProbeInput) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.probes = append(b.probes, in)
		if b.probeFails > 0 {
			b.probeFails--
			return errors.New("listing: connection refused")
		}
		return nil
	})
	env.OnActivity(a.DeadPages, mock.Anything, mock.Anything).Return(func(ctx context.Context, in contract.DeadPagesInput) (contract.DeadPagesResult, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		var res contract.DeadPagesResult
		for s := in.After + 1; s < b.pages() && len(res.Seqs) < in.Max; s++ {
			if b.failing[s] > 0 {
				res.Seqs = append(res.Seqs, s)
			}
		}
		res.Last = len(res.Seqs) < in.Max
		return res, nil
	})
	env.OnActivity(a.ArchiveJob, mock.Anything, mock.Anything).Return(func(ctx context.Context, st contract.Status) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.archived = append(b.archived, st)
		return nil
	})
	env.OnActivity(a.FindReports, mock.Anything, mock.Anything).Return(func(ctx context.Context, in contract.FindReportsInput) ([]contract.PageReport, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.findSeen = append(b.findSeen, in.Seqs)
		var out []contract.PageReport
		for _, s := range in.Seqs {
			if r, ok := b.found[s]; ok {
				out = append(out, r)
			}
		}
		return out, nil
	})
}

func quietSuite() *testsuite.WorkflowTestSuite {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
	return &suite
}

func newEnv(t *testing.T, b *bucket) *testsuite.TestWorkflowEnvironment {
	env := quietSuite().NewTestWorkflowEnvironment()
	wf.Register(env)
	b.mock(t, env)
	// The job's release goes to an account workflow that does not exist here.
	env.OnSignalExternalWorkflow(mock.Anything, contract.MigrationAccountWorkflowID("default"), "", contract.ReleaseSignal, mock.Anything).Return(nil)
	// The account grants the slot as soon as the job asks.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SlotGrantedSignal, nil) }, time.Millisecond)
	return env
}
