package devstack

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
)

// DefaultOpsPortBase is the ops port (/healthz, /metrics) of the first
// pool's first process. Pool k (in TaskQueues order: publish, compress,
// migrate, admit) starts at base+k, which are the worker mains' own
// defaults (8091–8094), and its process i takes base+k+10·(i−1): ports
// stay put across restarts and runs, so a Prometheus scrape config holds.
const DefaultOpsPortBase = 8091

// Planned is one process `make run` supervises.
type Planned struct {
	Name       string   // compress-2, edge
	Bin        string   // bin/compress
	Env        []string // its own settings, on top of the stack's
	Addr       string   // the address it binds (checked free before starting)
	MetricsURL string   // http://127.0.0.1:8102/metrics; empty: none
}

// PlanProcesses lays out the processes of `make run`: sizes[q] processes of
// each worker pool q (bin/<q>), then the edge, each with its ops address,
// then extra. A port that is taken is an error naming the process, not a
// crash loop.
func PlanProcesses(queues []string, sizes map[string]int, ip, binDir string, opsBase int, edgeMetricsAddr string, extra ...Planned) ([]Planned, error) {
	if len(queues) > 10 {
		return nil, fmt.Errorf("%d pools: the ops ports of more than 10 would overlap", len(queues))
	}
	var out []Planned
	for k, q := range queues {
		for i := 1; i <= sizes[q]; i++ {
			addr := net.JoinHostPort(ip, strconv.Itoa(opsBase+k+10*(i-1)))
			out = append(out, Planned{Name: InstanceName(q, i), Bin: filepath.Join(binDir, q),
				Env: []string{"HEALTH_ADDR=" + addr}, Addr: addr, MetricsURL: "http://" + addr + "/metrics"})
		}
	}
	out = append(out, Planned{Name: "edge", Bin: filepath.Join(binDir, "edge"), Addr: edgeMetricsAddr,
		Env: []string{"EDGE_METRICS_ADDR=" + edgeMetricsAddr}, MetricsURL: "http://" + edgeMetricsAddr + "/metrics"})
	out = append(out, extra...)
	for _, p := range out {
		if p.Addr == "" {
			continue
		}
		l, err := net.Listen("tcp", p.Addr)
		if err != nil {
			return nil, fmt.Errorf("%s: its port %s is taken (another stack running?): %w", p.Name, p.Addr, err)
		}
		l.Close()
	}
	return out, nil
}
