// Command benchtable is `make bench`: it runs every benchmark of the project
// (micro-benchmarks at Go's default duration, the end-to-end ones once, as
// each measures its own baseline in the same run) and prints one table with
// the targets the issues set.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/edgeflow/edgeflow/internal/cli"
)

// target is a number an issue asks for.
type target struct {
	bench, metric string
	max           bool // the metric must stay at or below limit (else at or above)
	limit         float64
}

var targets = []target{
	{"BenchmarkPublish1000Files", "pipeline/baseline", true, 1.25},
	{"BenchmarkPublish1000Files", "next-visible/first", true, 0.15},
	{"BenchmarkPublish20FilesVisible", "start-to-visible-s", true, 3},
	{"BenchmarkEdgeVsFileServer", "edge/fileserver", false, 0.8},
	// The audit of a 1,000-file package on both stores, end to end, against
	// a plain Go pool hashing the same objects (issue #27).
	{"BenchmarkAuditPackage", "audit/baseline", false, 0.8},
	// Migrate's rate over a plain minio-go worker pool's, medians of alternating runs.
	{"BenchmarkMigrateSmallObjects", "migrate/baseline", false, 1.0},
	{"BenchmarkMigrateLargeObjects", "migrate/baseline", false, 0.9},
	// Against rclone copy -M in the same rotation, and the per-object path
	// (a destination that does not extract archives: R2, S3; measured on
	// MinIO with batches off) against both (issue #39).
	{"BenchmarkMigrateSmallObjects", "migrate/rclone", false, 1.2},
	{"BenchmarkMigrateSmallObjects", "per-object/rclone", false, 1.2},
	{"BenchmarkMigrateSmallObjects", "per-object/baseline", false, 1.0},
	// A check of the whole catalog (5,900 libraries) well under the
	// schedule's 10-minute interval; with 1% new, every new version
	// visible within one interval.
	{"BenchmarkCheckFullCatalog", "nothing-new-s", true, 300},
	{"BenchmarkCheckFullCatalog", "1%-new-all-visible-s", true, 600},
	// The gate for admitted visitors with a fresh cookie, as its own
	// process against a plain httputil.ReverseProxy process and nginx, one
	// load generator process for all (issue #21; the in-process
	// BenchmarkGateAdmittedVsProxy stays, informational, as a
	// micro-benchmark).
	{"BenchmarkGateOutOfProcess", "gate/proxy", false, 0.9},
	{"BenchmarkGateOutOfProcess", "gate/nginx", false, 0.5},
	{"BenchmarkGateOutOfProcess", "added_p99_ms", true, 0.5},
	// The edge as its own process against nginx (one worker, sendfile,
	// gzip_static, brotli_static) serving the same published files from
	// disk, one core each (the edge with GOMAXPROCS=1), one load generator
	// process, hot files of 1–100 KiB, per Accept-Encoding (issue #37).
	// Its CPU time per request against nginx's (cpu-nginx/edge) and the
	// pair as deployed by default (edge-auto, nginx-auto) are
	// informational rows.
	{"BenchmarkEdgeOutOfProcess", "identity-edge/nginx", false, 0.8},
	{"BenchmarkEdgeOutOfProcess", "gzip-edge/nginx", false, 0.8},
	{"BenchmarkEdgeOutOfProcess", "br-edge/nginx", false, 0.8},
	{"BenchmarkEdgeOutOfProcess", "identity-added_p99_ms", true, 1},
	{"BenchmarkEdgeOutOfProcess", "gzip-added_p99_ms", true, 1},
	{"BenchmarkEdgeOutOfProcess", "br-added_p99_ms", true, 1},
	// One room for 100 data centers × 50 gates (issue #21): every snapshot
	// within 2 s of its minute, and a history that grows with data centers.
	{"BenchmarkRoom5000Gates", "snapshot-lag-max-s", true, 2},
	{"BenchmarkRoom5000Gates", "history-events/minute", true, 200},
	// How fresh Publish is (issue #37): release on the registry → the first
	// byte of one of its files served by the edge with the right SRI, for
	// releases under 50 files, with npm's follower and the Schedule; every
	// release served. The Schedule-only baseline (schedule-*) and the
	// 1,000-file releases (*-1000files-*) are informational rows. A new
	// version's first request answered 200 within EDGE_WAIT_FOR_PUBLISH,
	// each version published once.
	{"BenchmarkFreshness", "follower-p50-s", true, 10},
	{"BenchmarkFreshness", "follower-p95-s", true, 30},
	{"BenchmarkFreshness", "follower-max-s", true, 60},
	{"BenchmarkFreshness", "follower-not-served", true, 0},
	{"BenchmarkFreshness", "first-request-p95-s", true, 15},
	{"BenchmarkFreshness", "first-request-not-200", true, 0},
	{"BenchmarkFreshness", "first-request-published-twice", true, 0},
}

type run struct {
	name string
	args []string
}

func main() { cli.Execute(newRootCommand()) }

func newRootCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "benchtable",
		Short: "Run every benchmark of the project and print one table with the issues' targets: what make bench runs",
		Long: `Runs every benchmark of the project (micro-benchmarks at Go's default duration,
the end-to-end ones once, as each measures its own baseline in the same run) and
prints one table with the targets the issues set. Exit 1 when a run fails or a
target is missed. Run it from the repository's root.`,
		Example: `  make bench
  go run ./cmd/benchtable`,
		Args: cli.NoArgs,
		RunE: func(*cobra.Command, []string) error { return benchmarks() },
	}
}

func benchmarks() error {
	runs := []run{
		{"micro-benchmarks", []string{"test", "-run", "^$", "-bench", ".", "-count", "1", "./internal/..."}},
		// BenchmarkFreshness alone takes 25–35 minutes (FRESHNESS_MINUTES
		// twice, plus up to a Schedule interval): hence the timeout.
		{"end-to-end benchmarks", []string{"test", "-run", "^$", "-bench", ".", "-benchtime", "1x", "-count", "1", "-timeout", "90m", "./integration/..."}},
	}
	type row struct{ bench, metric, value string }
	var rows []row
	failed := false
	for _, r := range runs {
		fmt.Fprintf(os.Stderr, ">> %s: go %s\n", r.name, strings.Join(r.args, " "))
		cmd := exec.Command("go", r.args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		sc := bufio.NewScanner(io.TeeReader(out, os.Stderr))
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
				continue
			}
			name := fields[0]
			if i := strings.LastIndex(name, "-"); i > 0 {
				name = name[:i]
			}
			for i := 2; i+1 < len(fields); i += 2 {
				unit := fields[i+1]
				// Allocation counts are noise in a summary, and ns/op of a
				// benchmark that runs once is its own wall time, reported
				// better by its named metrics.
				if unit == "B/op" || unit == "allocs/op" || (unit == "ns/op" && fields[1] == "1") {
					continue
				}
				rows = append(rows, row{name, unit, fields[i]})
			}
		}
		if err := cmd.Wait(); err != nil {
			fmt.Fprintf(os.Stderr, "!! %s failed: %v\n", r.name, err)
			failed = true
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].bench < rows[j].bench })
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(os.Stdout)
	fmt.Fprintln(w, "benchmark\tmetric\tvalue\ttarget\t")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t\n", r.bench, r.metric, r.value, verdict(r.bench, r.metric, r.value))
	}
	w.Flush()
	if failed || missed {
		if missed {
			fmt.Fprintln(os.Stderr, "!! a target was missed")
		}
		return cli.Code(cli.ExitFailed)
	}
	return nil
}

// missed is set when a row misses its target: make bench fails.
var missed bool

func verdict(bench, metric, value string) string {
	for _, t := range targets {
		if t.bench != bench || t.metric != metric {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return "?"
		}
		ok := v <= t.limit
		op := "≤"
		if !t.max {
			ok, op = v >= t.limit, "≥"
		}
		mark := "met"
		if !ok {
			mark = "MISSED"
			missed = true
		}
		return fmt.Sprintf("%s %g: %s", op, t.limit, mark)
	}
	return ""
}
