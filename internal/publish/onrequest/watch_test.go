package onrequest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// However many requests ask for one version at once, it is started once,
// and takes one token.
func TestWatchesStartEachVersionOnce(t *testing.T) {
	clock := newFakeClock()
	ws := newWatches()
	l := newLimiter(10, 60, clock.now)
	var starts atomic.Int32
	got := make([]*watch, 200)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			got[i], _ = ws.startOrJoin("lib@1.0.0", clock.now(), l.take, "lib", func(*watch) { starts.Add(1) })
		})
	}
	wg.Wait()
	if n := starts.Load(); n != 1 {
		t.Fatalf("%d starts for 200 concurrent requests, want 1", n)
	}
	for i, w := range got {
		if w != got[0] {
			t.Fatalf("request %d waits on another watch than request 0", i)
		}
	}
	if n := takeN(l, "lib", 20); n != 9 {
		t.Errorf("%d tokens left for lib, want 9: joining a watch costs none", n)
	}
}

// A published or unstartable version is forgotten at once; a failed or
// skipped one is remembered until its memo expires, and starts nothing
// meanwhile.
func TestWatchesRememberFailuresForAWhile(t *testing.T) {
	clock := newFakeClock()
	ws := newWatches()
	l := newLimiter(100, 100, clock.now)
	start := func(key string) *watch {
		w, _ := ws.startOrJoin(key, clock.now(), l.take, "lib", func(*watch) {})
		return w
	}
	published := start("lib@1.0.0")
	ws.end("lib@1.0.0", published, Answer{Kind: Published}, time.Time{})
	if ws.find("lib@1.0.0", clock.now()) != nil {
		t.Error("a published version's watch is kept")
	}
	failed := start("lib@2.0.0")
	ws.end("lib@2.0.0", failed, Answer{Kind: NotReady, Reason: "failed"}, clock.now().Add(time.Minute))
	if w := ws.find("lib@2.0.0", clock.now().Add(30*time.Second)); w != failed || w.answer.Reason != "failed" {
		t.Errorf("a failed version's outcome is not remembered within its memo: %v", w)
	}
	if w := start("lib@2.0.0"); w != failed {
		t.Error("a remembered failure was started again")
	}
	clock.add(time.Minute)
	if ws.find("lib@2.0.0", clock.now()) != nil {
		t.Error("a failure is remembered past its memo")
	}
}

// Past the limit, no watch is made and the caller learns when to retry.
func TestWatchesRefuseStartsPastTheLimit(t *testing.T) {
	clock := newFakeClock()
	ws := newWatches()
	l := newLimiter(1, 60, clock.now)
	if w, _ := ws.startOrJoin("lib@1.0.0", clock.now(), l.take, "lib", func(*watch) {}); w == nil {
		t.Fatal("the first start was refused")
	}
	w, retryAfter := ws.startOrJoin("lib@1.1.0", clock.now(), l.take, "lib", func(*watch) { t.Error("started past the limit") })
	if w != nil || retryAfter <= 0 {
		t.Errorf("past the limit: watch %v, retryAfter %v; want none and a wait", w, retryAfter)
	}
	if ws.find("lib@1.1.0", clock.now()) != nil {
		t.Error("a refused start left a watch behind")
	}
}
