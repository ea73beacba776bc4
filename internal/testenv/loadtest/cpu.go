package loadtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPU per request is what the out-of-process benchmarks compare besides
// req/s: on a machine shared with other work, a round's req/s moves with
// whatever else runs, while the CPU time a server spends per request moves
// far less (it is not charged for the time it waits for a core).

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports (the kernel scales to it).
const clockTicks = 100

// ProcessCPU is the CPU time (user + system) pid has used so far, all its
// threads, from /proc/<pid>/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	t, err := statCPU(stat)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return t, nil
}

// ChildrenCPU is the CPU time (user + system) of pid's children that
// ended and were waited for (cutime + cstime), e.g. a command a benchmark
// ran to compare with.
func ChildrenCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	t, err := statTicks(stat, 13)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return t, nil
}

// statCPU is utime + stime of a /proc/<pid>/stat line.
func statCPU(stat []byte) (time.Duration, error) { return statTicks(stat, 11) }

// statTicks is the sum of the two times at fields[from] and fields[from+1]
// of a /proc/<pid>/stat line, counted from the state (field 3).
func statTicks(stat []byte, from int) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses: the fields counted from the last ")" are state (3),
	// ..., utime (14), stime (15).
	end := strings.LastIndexByte(string(stat), ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < from+2 {
		return 0, fmt.Errorf("%d fields after the command name, want at least %d", len(fields), from+2)
	}
	var ticks int64
	for _, f := range fields[from : from+2] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// ProcessesCPU is the CPU time pids have used so far, together.
func ProcessesCPU(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		t, err := ProcessCPU(pid)
		if err != nil {
			return 0, err
		}
		total += t
	}
	return total, nil
}

// NginxWorkers are the worker processes of the nginx that StartNginx ran
// in dir: the children of the master whose pid is in dir/nginx.pid. The
// master only watches them; the workers serve.
func NginxWorkers(dir string) ([]int, error) {
	data, err := os.ReadFile(filepath.Join(dir, "nginx.pid"))
	if err != nil {
		return nil, err
	}
	master, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("nginx.pid: %w", err)
	}
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", master, master))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(children)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("nginx master %d's children: %w", master, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("nginx master %d has no worker", master)
	}
	return pids, nil
}
