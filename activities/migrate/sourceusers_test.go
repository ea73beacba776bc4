package migrate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// jobQueries is a Temporal client whose jobs answer the source-users
// query, counting the queries; the answer waits for release when set.
type jobQueries struct {
	client.Client // any other call panics
	asked         atomic.Int64
	answer        contract.SourceUsers
	fail          error
	release       chan struct{}
	askedWith     chan context.Context
}

func (q *jobQueries) QueryWorkflow(ctx context.Context, workflowID, _ string, queryType string, _ ...interface{}) (converter.EncodedValue, error) {
	q.asked.Add(1)
	if queryType != contract.SourceUsersQuery {
		return nil, errors.New("unexpected query " + queryType)
	}
	if q.askedWith != nil {
		q.askedWith <- ctx
	}
	if q.release != nil {
		<-q.release
	}
	if q.fail != nil {
		return nil, q.fail
	}
	return sourceUsersValue{q.answer}, nil
}

type sourceUsersValue struct{ u contract.SourceUsers }

func (v sourceUsersValue) HasValue() bool { return true }

func (v sourceUsersValue) Get(ptr any) error {
	*ptr.(*contract.SourceUsers) = v.u
	return nil
}

// A still clock, moved by hand.
type stillClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stillClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *stillClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func pageOf(job string, seq int) contract.PageInput {
	return contract.PageInput{Job: job, Execution: "e1", Seq: seq, JobWorkflowID: contract.MigrationWorkflowID(job)}
}

// askAll has n pages of job ask at once and fails unless each got users.
func askAll(t *testing.T, a *Activities, job string, n, users int) {
	t.Helper()
	var wg sync.WaitGroup
	got := make([]int, n)
	for i := range n {
		wg.Go(func() {
			u, ok := a.sourceUsers(context.Background(), pageOf(job, i))
			if ok {
				got[i] = u
			}
		})
	}
	wg.Wait()
	// Errorf, not Fatalf: a test may call this on a goroutine of its own,
	// where Fatalf would end the goroutine and leave the test waiting.
	for i, u := range got {
		if u != users {
			t.Errorf("page %d of %s was told %d users, want %d", i, job, u, users)
			return
		}
	}
}

// Twenty pages of one job on one worker ask their job once an interval,
// not twenty times: the pages asking while the query is under way wait for
// its answer, those asking later in the interval take it; the next interval
// asks again, and another job has its own query.
func TestPagesOfOneJobShareOneSourceUsersQueryAnInterval(t *testing.T) {
	q := &jobQueries{answer: contract.SourceUsers{Execution: "e1", Users: 3}, release: make(chan struct{})}
	clock := &stillClock{t: time.Unix(1e9, 0)}
	a := &Activities{Temporal: q, usersAnswers: sourceUsersAnswers{now: clock.now}}
	done := make(chan struct{})
	go func() { askAll(t, a, "one", 20, 3); close(done) }()
	close(q.release) // while some pages wait, others have yet to ask
	<-done
	if n := q.asked.Load(); n != 1 {
		t.Fatalf("20 pages of one job asked it %d times in one interval, want once", n)
	}
	clock.add(shareEvery - time.Millisecond)
	askAll(t, a, "one", 20, 3)
	if n := q.asked.Load(); n != 1 {
		t.Fatalf("pages asking later in the interval asked again (%d queries), want the answer taken", n)
	}
	clock.add(time.Millisecond)
	askAll(t, a, "one", 20, 3)
	if n := q.asked.Load(); n != 2 {
		t.Fatalf("%d queries after the interval, want a second one", n)
	}
	askAll(t, a, "other", 5, 3)
	if n := q.asked.Load(); n != 3 {
		t.Fatalf("%d queries after another job's pages asked, want one more", n)
	}
}

// A query that fails, or answers for another execution of the job, gives
// no number (the page keeps its share, never raised); its answer is shared
// too, so the pages do not all ask again in that interval.
func TestAFailedSourceUsersQueryGivesNoShare(t *testing.T) {
	clock := &stillClock{t: time.Unix(1e9, 0)}
	q := &jobQueries{fail: errors.New("the job continued as new")}
	a := &Activities{Temporal: q, usersAnswers: sourceUsersAnswers{now: clock.now}}
	for i := range 3 {
		if u, ok := a.sourceUsers(context.Background(), pageOf("j", i)); ok {
			t.Fatalf("a failed query told page %d %d users", i, u)
		}
	}
	if n := q.asked.Load(); n != 1 {
		t.Fatalf("a failed query was asked %d times in one interval, want once", n)
	}
	clock.add(shareEvery)
	q.fail, q.answer = nil, contract.SourceUsers{Execution: "e0", Users: 1}
	if u, ok := a.sourceUsers(context.Background(), pageOf("j", 0)); ok {
		t.Fatalf("an answer for another execution told the page %d users", u)
	}
}

// A page that ends while its job's query is under way stops waiting at
// once, and does not end the query for the other pages of the job.
func TestAPageEndingDoesNotFailTheSharedQuery(t *testing.T) {
	q := &jobQueries{answer: contract.SourceUsers{Execution: "e1", Users: 2}, release: make(chan struct{}), askedWith: make(chan context.Context, 1)}
	a := &Activities{Temporal: q, usersAnswers: sourceUsersAnswers{now: (&stillClock{t: time.Unix(1e9, 0)}).now}}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan bool)
	go func() {
		_, ok := a.sourceUsers(ctx, pageOf("j", 0))
		first <- ok
	}()
	qctx := <-q.askedWith
	cancel()
	if ok := <-first; ok {
		t.Fatal("a page whose context ended was told a number")
	}
	if err := qctx.Err(); err != nil {
		t.Fatalf("the page ending ended the shared query: %v", err)
	}
	close(q.release)
	if u, ok := a.sourceUsers(context.Background(), pageOf("j", 1)); !ok || u != 2 {
		t.Fatalf("the next page got %d, %v; want the shared answer, 2", u, ok)
	}
	if n := q.asked.Load(); n != 1 {
		t.Fatalf("%d queries, want one", n)
	}
}
