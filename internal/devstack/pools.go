package devstack

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxPoolProcesses bounds one pool on one machine: beyond it a typo, not a plan.
const MaxPoolProcesses = 32

// PoolSizes reads how many processes each worker pool runs under `make
// run`: one each by default; WORKERS names several at once
// ("compress=3,publish=2"), and <QUEUE>_WORKERS sets one pool
// (COMPRESS_WORKERS=3), winning over WORKERS. 0 runs none of a pool (it
// runs elsewhere). getenv is os.Getenv in make run. Every problem is an
// error naming the variable and the pools there are.
func PoolSizes(queues []string, getenv func(string) string) (map[string]int, error) {
	sizes := make(map[string]int, len(queues))
	for _, q := range queues {
		sizes[q] = 1
	}
	parse := func(name, v string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > MaxPoolProcesses {
			return 0, fmt.Errorf("%s=%q: want a process count from 0 to %d", name, v, MaxPoolProcesses)
		}
		return n, nil
	}
	if all := strings.TrimSpace(getenv("WORKERS")); all != "" {
		for _, entry := range strings.FieldsFunc(all, func(r rune) bool { return r == ',' || r == ' ' }) {
			q, v, ok := strings.Cut(entry, "=")
			if !ok {
				return nil, fmt.Errorf("WORKERS=%q: %q is not POOL=COUNT (pools: %s)", all, entry, strings.Join(queues, ", "))
			}
			q = strings.TrimSpace(q)
			if !slices.Contains(queues, q) {
				return nil, fmt.Errorf("WORKERS=%q: no pool %q (pools: %s)", all, q, strings.Join(queues, ", "))
			}
			n, err := parse("WORKERS "+q, v)
			if err != nil {
				return nil, err
			}
			sizes[q] = n
		}
	}
	for _, q := range queues {
		name := PoolEnv(q)
		if v := getenv(name); v != "" {
			n, err := parse(name, v)
			if err != nil {
				return nil, err
			}
			sizes[q] = n
		}
	}
	return sizes, nil
}

// PoolEnv is the variable that sets one pool's process count: COMPRESS_WORKERS.
func PoolEnv(queue string) string {
	return strings.ToUpper(strings.ReplaceAll(queue, "-", "_")) + "_WORKERS"
}

// InstanceName names process i (from 1) of a pool: "compress-1".
func InstanceName(queue string, i int) string { return fmt.Sprintf("%s-%d", queue, i) }
