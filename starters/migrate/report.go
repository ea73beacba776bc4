package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// newReportCommand writes a job's per-object report (key, status, bytes,
// error, reason, attempts, verify), streaming from the job store in
// constant memory.
func newReportCommand(c *common) *cobra.Command {
	var format, out, syncRun string
	var onlyFailed bool
	var jobStore migrate.JobStoreConfig
	cmd := command("report JOB", "Write a job's per-object report: CSV or JSON lines, to a file, stdout or a bucket", "",
		"  migrate report m-20260501-abcd > report.csv\n  migrate report m-20260501-abcd --failed --format jsonl --out s3://reports/m-20260501-abcd.jsonl\n  migrate report m-20260501-abcd --sync migrate-sync/m-20260501-abcd-2026-05-02T10:00:00Z",
		oneJob, func(args []string) int { return runReport(c, args[0], syncRun, format, out, onlyFailed, jobStore) })
	fs := cmd.Flags()
	fs.StringVar(&syncRun, "sync", "", "the report of this sync run of the job (its workflow id, as `migrate sync --json` prints it) instead of the job's")
	fs.StringVar(&format, "format", migrate.FormatCSV, "csv or jsonl")
	fs.StringVar(&out, "out", "-", "FILE, - for stdout, or s3://BUCKET/KEY on the job store's endpoint")
	fs.BoolVar(&onlyFailed, "failed", false, "only the objects that failed (the dead letters)")
	jobStore.RegisterFlags(fs)
	return cmd
}

func runReport(c *common, job, syncRun, format, out string, onlyFailed bool, jobStore migrate.JobStoreConfig) int {
	if format != migrate.FormatCSV && format != migrate.FormatJSONLines {
		return c.fail(cli.ExitUsage, job, "--format %q: use csv or jsonl", format)
	}
	var dest migrate.Location
	if strings.HasPrefix(out, "s3://") {
		var err error
		if dest, err = migrate.ParseLocation(out); err != nil || dest.Prefix == "" || strings.HasSuffix(dest.Prefix, "/") {
			return c.fail(cli.ExitUsage, job, "--out %q: give s3://BUCKET/KEY (a whole key)", out)
		}
	}
	tc, code := c.dial()
	if tc == nil {
		return code
	}
	defer tc.Close()
	var st contract.Status
	var err error
	if syncRun != "" {
		if !strings.HasPrefix(syncRun, contract.MigrationSyncScheduleID(job)+"-") {
			return c.fail(cli.ExitUsage, job, "--sync %q: not a sync run of job %s (its ids start with %s-)", syncRun, job, contract.MigrationSyncScheduleID(job))
		}
		st, err = jobclient.QueryRun(background, tc, job, syncRun)
	} else {
		st, err = jobclient.Status(background, tc, jobStore, job)
	}
	if err != nil {
		return c.fail(statusCode(err), job, "job %s: %v", job, err)
	}
	store, err := jobStore.Open()
	if err != nil {
		return c.fail(cli.ExitUsage, job, "job store: %v", err)
	}
	write := func(w io.Writer) (int, error) {
		return jobclient.WriteReport(background, store, job, st.Execution, format, onlyFailed, w)
	}
	var n int
	switch {
	case dest.Bucket != "":
		n, err = reportToBucket(store.Store, dest, format, write)
	case out == "-":
		n, err = write(os.Stdout)
	default:
		var f *os.File
		if f, err = os.Create(out); err == nil {
			n, err = write(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		return c.fail(cli.ExitUnavailable, job, "report of job %s: %v", job, err)
	}
	fmt.Fprintf(os.Stderr, "report of job %s (%s): %d objects written to %s\n", job, st.State, n, out)
	if st.State == contract.StateRunning || st.State == contract.StatePaused {
		fmt.Fprintln(os.Stderr, "  the job is not done: pages still being copied are not in it yet")
	}
	return cli.ExitOK
}

// reportToBucket streams the report into an object on the job store's
// endpoint while it is written.
func reportToBucket(s objectstore.Store, dest migrate.Location, format string, write func(io.Writer) (int, error)) (int, error) {
	if err := objectstore.EnsureBuckets(background, s, dest.Bucket); err != nil {
		return 0, err
	}
	pr, pw := io.Pipe()
	var n int
	go func() {
		var err error
		n, err = write(pw)
		pw.CloseWithError(err)
	}()
	contentType := "text/csv; charset=utf-8"
	if format == migrate.FormatJSONLines {
		contentType = "application/x-ndjson"
	}
	_, err := s.Put(background, dest.Bucket, dest.Prefix, pr, -1, objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: contentType}})
	pr.CloseWithError(err)
	return n, err
}

// runSplit splits a bucket by its top-level prefixes into parallel jobs,
// each a key range, together covering every key exactly once. They run
// under the account's limit: those beyond it wait in line.
func newSplitCommand(c *common) *cobra.Command {
	var f jobFlags
	var parts int
	var delimiter string
	cmd := command("split", "Split a bucket by prefix into parallel jobs (the flags of start, and --parts N)",
		"Splits a bucket by its top-level prefixes into parallel jobs, each a key range,\ntogether covering every key exactly once. They run under the account's limit:\nthose beyond it wait in line.",
		"  migrate split --parts 4 --source s3://old-bucket --source-endpoint old.example.com:9000 --dest s3://new-bucket --dest-endpoint new.example.com:9000",
		cli.NoArgs, func([]string) int { f.common = *c; return runSplit(&f, parts, delimiter) })
	f.register(cmd.Flags())
	cmd.Flags().IntVar(&parts, "parts", 0, "number of jobs (default: the account's limit, 3)")
	cmd.Flags().StringVar(&delimiter, "delimiter", "/", "what separates a key's top-level prefix")
	return cmd
}

func runSplit(f *jobFlags, parts int, delimiter string) int {
	if f.keys != "" {
		return f.fail(cli.ExitUsage, "", "--keys: a key list is split by nothing; start one job with it")
	}
	if parts <= 0 {
		parts = migrate.DefaultJobLimit
	}
	base := f.job
	if base == "" {
		base = jobclient.NewJobID()
	}
	// Check every flag once, with the first job's id.
	first, problems := f.input(base + "-1")
	if len(problems) > 0 {
		return f.fail(cli.ExitUsage, base, "%s", strings.Join(problems, "\n  "))
	}
	if first.Source.Provider == migrate.ProviderGCS {
		return f.fail(cli.ExitUsage, base, "--source %s: split lists S3 sources only; start one job for a gs:// source", first.Source.Location)
	}
	srcCreds, _, _ := migrate.LoadCredentials(os.Getenv, f.credentials)
	src, err := s3.New(s3.Config{Endpoint: first.Source.Endpoint, Secure: first.Source.Secure, Region: first.Source.Region,
		AccessKey: srcCreds.AccessKey, SecretKey: srcCreds.SecretKey, SessionToken: srcCreds.SessionToken})
	if err != nil {
		return f.fail(cli.ExitUsage, base, "source: %v", err)
	}
	var prefixes []string
	opts := objectstore.ListOptions{Prefix: first.Source.Prefix, Delimiter: delimiter}
	for {
		page, err := src.List(background, first.Source.Bucket, opts)
		if err != nil {
			return f.fail(cli.ExitUnavailable, base, "list the prefixes of %s: %v", first.Source, err)
		}
		prefixes = append(prefixes, page.CommonPrefixes...)
		if page.NextToken == "" {
			break
		}
		opts.ContinuationToken = page.NextToken
	}
	splits := migrate.SplitByPrefix(prefixes, parts)
	tc, code := f.dial()
	if tc == nil {
		return code
	}
	defer tc.Close()
	type started struct {
		Job      string   `json:"job"`
		Range    string   `json:"range"`
		Prefixes []string `json:"prefixes"`
	}
	var out []started
	for i, sp := range splits {
		job := fmt.Sprintf("%s-%d", base, i+1)
		in, problems := f.input(job) // sealed for this job
		if len(problems) > 0 {
			return f.fail(cli.ExitUsage, job, "%s", strings.Join(problems, "\n  "))
		}
		in.Range = sp.Range
		if _, err := jobclient.Start(background, tc, in); err != nil {
			return f.fail(temporalCode(err), job, "start job %s: %v", job, err)
		}
		out = append(out, started{Job: job, Range: sp.Range.String(), Prefixes: sp.Prefixes})
	}
	if f.asJSON {
		cli.PrintJSON(out)
		return cli.ExitOK
	}
	fmt.Printf("split %s by %d top-level prefixes into %d jobs (account %s runs %s at once; the rest wait in line):\n",
		first.Source, len(prefixes), len(out), f.account, "up to its limit")
	for _, s := range out {
		fmt.Printf("  %s  %s (%d prefixes)\n", s.Job, s.Range, len(s.Prefixes))
	}
	fmt.Println("follow them with: go run ./starters/migrate list")
	return cli.ExitOK
}
