package admit

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// signalCounter is the baseline: a workflow that only counts the reports it
// receives, on the same server, worker and signal name.
func signalCounter(ctx workflow.Context) error {
	n := 0
	if err := workflow.SetQueryHandler(ctx, "count", func() (int, error) { return n, nil }); err != nil {
		return err
	}
	ch := workflow.GetSignalChannel(ctx, contract.ReportSignal)
	for {
		var r engine.Report
		ch.Receive(ctx, &r)
		n++
	}
}

// BenchmarkRoomReports measures how many gate reports a second one room
// workflow absorbs on the dev server, and how many history events each
// costs, against a workflow that only counts the same signals.
func BenchmarkRoomReports(b *testing.B) {
	if env == nil {
		b.Skip("needs the dev server")
	}
	const reports, senders = 600, 12
	w := worker.New(env.Client, contract.TaskQueue, worker.Options{})
	registerRoom(w)
	w.RegisterWorkflowWithOptions(signalCounter, workflow.RegisterOptions{Name: "SignalCounter"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	ctx := context.Background()
	rc := roomclient.Client{C: env.Client}
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
		if _, err := rc.Create(ctx, engine.Settings{Name: name, TotalActiveUsers: 1 << 20, NewUsersPerMinute: 1 << 16}, roomclient.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		room := measure(b, reports, senders, name, contract.RoomWorkflowID(name), func() int {
			d, err := rc.Describe(ctx, name)
			if err != nil {
				return -1
			}
			return d.Stats.Reports + d.Stats.ReportsRefused
		})
		baseID := "bench-counter-" + name
		if _, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: baseID, TaskQueue: contract.TaskQueue}, "SignalCounter"); err != nil {
			b.Fatal(err)
		}
		base := measure(b, reports, senders, name, baseID, func() int {
			v, err := env.Client.QueryWorkflow(ctx, baseID, "", "count")
			n := -1
			if err == nil {
				_ = v.Get(&n)
			}
			return n
		})
		_ = env.Client.TerminateWorkflow(ctx, baseID, "", "benchmark done")
		b.ReportMetric(room.perSecond, "room-reports/s")
		b.ReportMetric(base.perSecond, "bare-reports/s")
		b.ReportMetric(room.perSecond/base.perSecond, "room/bare")
		b.ReportMetric(room.events, "room-events/report")
		b.ReportMetric(base.events, "bare-events/report")
	}
}

type throughput struct{ perSecond, events float64 }

// measure sends reports from senders goroutines as fast as the server takes
// them and waits until done() counts them all.
func measure(b *testing.B, reports, senders int, room, id string, done func() int) throughput {
	ctx := context.Background()
	minute := engine.MinuteOf(time.Now(), time.Minute)
	start := time.Now()
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			dc := fmt.Sprintf("dc%d", s%4)
			for i := s; i < reports; i += senders {
				r := engine.Report{Room: room, DataCenter: dc, Gate: fmt.Sprintf("%s-%d", dc, s), Minute: minute, Seq: uint64(i + 1),
					NewVisitors: i, Admitted: i, Seen: i, Queued: []engine.MinuteCount{{Minute: minute, Count: 3}},
					Renewed: []engine.MinuteCount{{Minute: minute.Add(-time.Minute), Count: i}},
					Taken:   []engine.PoolCount{{Pool: engine.PoolNew, Scope: dc, Count: i}, {Pool: engine.PoolNew, Scope: engine.Anywhere, Count: 1}}}
				if err := env.Client.SignalWorkflow(ctx, id, "", contract.ReportSignal, r); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(2 * time.Minute)
	for done() < reports {
		if time.Now().After(deadline) {
			b.Fatalf("%s: only %d of %d reports handled", id, done(), reports)
		}
		time.Sleep(100 * time.Millisecond) // rarely: queries compete with the reports for the worker
	}
	elapsed := time.Since(start)
	d, err := env.Client.DescribeWorkflow(ctx, id, "")
	if err != nil {
		b.Fatal(err)
	}
	return throughput{perSecond: float64(reports) / elapsed.Seconds(), events: float64(d.HistoryLength) / float64(reports)}
}
