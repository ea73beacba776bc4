package admit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/worker"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	gatepkg "github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/testenv/loadtest"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// BenchmarkRoom5000Gates runs one room on the dev server with 100 data
// centers of 50 gates each: 5,000 of the gate's own reporters
// (gate.Reporter, each with its own registry and tally, fed a new visitor
// every couple of seconds), every data center's gates reporting through
// one Redis shared by all of them (keys by data center) and aggregated
// there by one lease holder per data center. It measures, over
// consecutive minutes after a first one: how long after its minute began
// each snapshot was published (the largest), the room's history events per
// minute, the signals a second it got, and the dev server's CPU seconds per
// minute. ADMIT_BENCH_MINUTE_SECONDS (default 60, the issue's),
// ADMIT_BENCH_MINUTES (default 10), ADMIT_BENCH_DATA_CENTERS (default 100)
// and ADMIT_BENCH_GATES_PER_DC (default 50) make a smaller run.
func BenchmarkRoom5000Gates(b *testing.B) {
	if env == nil || env.Redis == nil {
		b.Skip("needs the dev server and Redis")
	}
	dataCenters, gatesPerDC := envInt(b, "ADMIT_BENCH_DATA_CENTERS", 100), envInt(b, "ADMIT_BENCH_GATES_PER_DC", 50)
	minuteSeconds, minutes := envInt(b, "ADMIT_BENCH_MINUTE_SECONDS", 60), envInt(b, "ADMIT_BENCH_MINUTES", 10)
	w := worker.New(env.Client, contract.TaskQueue, worker.Options{})
	registerRoom(w)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	redis, err := gatepkg.NewRedisClient(env.Redis.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer redis.Close()
	ctx := context.Background()
	rc := roomclient.Client{C: env.Client}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("gates5000-%d-%d", time.Now().Unix(), i)
		if _, err := rc.Create(ctx, engine.Settings{Name: name, TotalActiveUsers: 1 << 24, NewUsersPerMinute: 1 << 20},
			roomclient.CreateOptions{MinuteSeconds: minuteSeconds}); err != nil {
			b.Fatal(err)
		}
		var signals atomic.Int64
		sink := func(ctx context.Context, r engine.Report) error {
			signals.Add(1)
			return rc.Report(ctx, r, nil)
		}
		type dcGates struct {
			regs      []*gatepkg.Registry
			reporters []*gatepkg.Reporter
		}
		dcs := make([]*dcGates, dataCenters)
		for d := range dcs {
			dcName := fmt.Sprintf("dc%03d", d)
			g := &dcGates{}
			for k := range gatesPerDC {
				id := fmt.Sprintf("%s-%02d", dcName, k)
				reg := gatepkg.NewRegistry(engine.Gate{DataCenter: dcName, ID: id})
				g.regs = append(g.regs, reg)
				g.reporters = append(g.reporters, &gatepkg.Reporter{Registry: reg, Sink: sink, Logger: quiet,
					Aggregate: &gatepkg.Aggregator{Client: redis, DataCenter: dcName, Holder: id + "/" + name, Logger: quiet}})
			}
			dcs[d] = g
		}
		// The gates read the room's snapshot as a watcher would.
		var snapMu sync.Mutex
		published := map[time.Time]time.Time{} // minute → when its snapshot was published
		poll := func() error {
			snap, err := rc.Snapshot(ctx, name)
			if err != nil {
				return err
			}
			snapMu.Lock()
			defer snapMu.Unlock()
			if _, seen := published[snap.Minute]; seen {
				return nil
			}
			published[snap.Minute] = snap.PublishedAt
			for _, g := range dcs {
				for _, reg := range g.regs {
					if err := reg.Update(&snap, nil, time.Now()); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if err := poll(); err != nil {
			b.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() {
			for runCtx.Err() == nil {
				if err := poll(); err != nil && runCtx.Err() == nil {
					b.Logf("reading the snapshot: %v (a watcher tries again)", err)
				}
				time.Sleep(250 * time.Millisecond) // a watcher's poll; the snapshot says when it was published
			}
		})
		length := time.Duration(minuteSeconds) * time.Second
		for d, g := range dcs {
			wg.Go(func() {
				tick := time.NewTicker(250 * time.Millisecond)
				defer tick.Stop()
				n := 0
				for {
					select {
					case <-runCtx.Done():
						return
					case <-tick.C:
					}
					for k, p := range g.reporters {
						// A new visitor at each gate about every 2.5 s, spread.
						if (n+k)%10 == 0 {
							if r := g.regs[k].Room(name); r != nil {
								r.Tally().Add(engine.Effect{Minute: engine.MinuteOf(time.Now(), length), NewVisitor: true, Admitted: true,
									Seen: true, Pool: engine.PoolNew, Scope: fmt.Sprintf("dc%03d", d)})
							}
						}
						p.Tick(runCtx)
					}
					n++
				}
			})
		}
		// One minute for the gates to appear, then the measured ones.
		first := engine.MinuteOf(time.Now(), length).Add(2 * length)
		time.Sleep(time.Until(first))
		startEvents, startRun := historyLength(b, contract.RoomWorkflowID(name))
		startCPU, startSignals := temporalCPU(b), signals.Load()
		end := first.Add(time.Duration(minutes) * length)
		time.Sleep(time.Until(end.Add(length / 6))) // the last minute's snapshot too
		endEvents, endRun := historyLength(b, contract.RoomWorkflowID(name))
		kinds := eventKinds(b, contract.RoomWorkflowID(name), endRun, startEvents, endEvents)
		cpu, events, sent := temporalCPU(b)-startCPU, endEvents-startEvents, signals.Load()-startSignals
		stop()
		wg.Wait()
		lagMax := 0.0
		snapMu.Lock()
		for m := first; !m.After(end); m = m.Add(length) {
			at, ok := published[m]
			if !ok {
				b.Errorf("no snapshot of %s seen", m.Format(time.TimeOnly))
				continue
			}
			lagMax = max(lagMax, at.Sub(m).Seconds())
			b.Logf("snapshot of %s published %.2f s after its minute began", m.Format(time.TimeOnly), at.Sub(m).Seconds())
		}
		snapMu.Unlock()
		if endRun != startRun {
			b.Fatal("the room continued as new during the measurement; raise its history budget")
		}
		b.ReportMetric(lagMax, "snapshot-lag-max-s")
		b.ReportMetric(float64(events)/float64(minutes), "history-events/minute")
		// What the events are: the reports, and the workflow tasks they
		// wake (three events each).
		b.ReportMetric(float64(kinds[enums.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED])/float64(minutes), "signal-events/minute")
		b.ReportMetric(float64(kinds[enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED])/float64(minutes), "workflow-tasks/minute")
		b.Logf("%d data centers × %d gates, %d-s minutes: history events over %d minutes by type: %v", dataCenters, gatesPerDC, minuteSeconds, minutes, kinds)
		b.ReportMetric(cpu/float64(minutes), "temporal-cpu-s/minute")
		b.ReportMetric(float64(sent)/(float64(minutes)*length.Seconds()), "signals/s")
		// Gates reporting alone (every 2 s, and once more as each minute
		// ends) would send this many a second.
		perGate := float64(dataCenters*gatesPerDC) * (length.Seconds()/2 + 1) / length.Seconds()
		b.ReportMetric(float64(sent)/(float64(minutes)*length.Seconds())/perGate, "signals/per-gate-signals")
	}
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}

// historyLength is the room's current run's history length, and the run.
func historyLength(b *testing.B, id string) (int, string) {
	d, err := env.Client.DescribeWorkflow(context.Background(), id, "")
	if err != nil {
		b.Fatal(err)
	}
	return int(d.HistoryLength), d.WorkflowExecution.RunID
}

// eventKinds counts the events of a run's history with IDs in (from, to]
// by type.
func eventKinds(b *testing.B, id, run string, from, to int) map[enums.EventType]int {
	out := map[enums.EventType]int{}
	it := env.Client.GetWorkflowHistory(context.Background(), id, run, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		if id := int(e.GetEventId()); id > from && id <= to {
			out[e.GetEventType()]++
		}
	}
	return out
}

// temporalCPU is the dev server process's user and system CPU seconds.
func temporalCPU(b *testing.B) float64 {
	t, err := loadtest.ProcessCPU(env.Temporal.PID())
	if err != nil {
		b.Fatal(err)
	}
	return t.Seconds()
}
