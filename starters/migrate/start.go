package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// jobFlags are the flags that describe a job (start and split).
type jobFlags struct {
	common
	source, sourceEndpoint, sourceRegion  string
	dest, destEndpoint, destRegion        string
	sourceInsecure, destInsecure          bool
	keys, overwrite, job, account         string
	credentials                           string
	verify, dryRun, follow, detach        bool
	stripSourcePrefix                     bool
	concurrency, pageSize, pagesInFlight  int
	multipartCutoff, partSize, copyCutoff string
	jobStore                              migrate.JobStoreConfig
	// filters are --include and --exclude in the order given.
	filters                       []migrate.FilterRule
	minSize, maxSize              string
	modifiedAfter, modifiedBefore string
	maxBandwidth, maxRequests     string
}

// ruleFlag is --include or --exclude: both append to one list, so the rules
// keep the order they were given in across the two flags.
type ruleFlag struct {
	rules   *[]migrate.FilterRule
	include bool
}

func (r ruleFlag) Set(p string) error {
	if r.include {
		*r.rules = append(*r.rules, migrate.FilterRule{Include: p})
	} else {
		*r.rules = append(*r.rules, migrate.FilterRule{Exclude: p})
	}
	return nil
}

func (r ruleFlag) Type() string { return "pattern" }

func (r ruleFlag) String() string {
	var ps []string
	for _, rule := range *r.rules {
		if p, inc := rule.Pattern(); inc == r.include {
			ps = append(ps, p)
		}
	}
	return strings.Join(ps, ",")
}

// register adds the flags that describe a job; the connection and --json
// are the root's.
func (f *jobFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.source, "source", "", "source s3://BUCKET[/PREFIX], or gs://BUCKET[/PREFIX] on Google Cloud Storage (required)")
	fs.StringVar(&f.sourceEndpoint, "source-endpoint", "", "source store host:port (required for s3://)")
	fs.BoolVar(&f.sourceInsecure, "source-insecure", false, "plain HTTP to the source (default https)")
	fs.StringVar(&f.sourceRegion, "source-region", "", "source region")
	fs.StringVar(&f.dest, "dest", "", "destination s3://BUCKET[/PREFIX]; the prefix is prepended to every key as is (required)")
	fs.StringVar(&f.destEndpoint, "dest-endpoint", "", "destination store host:port (required)")
	fs.BoolVar(&f.destInsecure, "dest-insecure", false, "plain HTTP to the destination (default https)")
	fs.StringVar(&f.destRegion, "dest-region", "", "destination region")
	fs.StringVar(&f.keys, "keys", "", "copy only the keys listed in FILE, one per line, instead of listing the source; they are whole source keys, so --source takes no prefix")
	fs.StringVar(&f.overwrite, "overwrite", string(migrate.OverwriteIfDifferent), "objects already at the destination: never, always or if-different (size plus ETag or checksum)")
	fs.BoolVar(&f.verify, "verify", false, "compare every copy with its source (size and MD5) and report mismatches")
	fs.BoolVar(&f.dryRun, "dry-run", false, "list and decide, copy nothing: what would be copied")
	fs.StringVar(&f.job, "job", "", "job id (default: a new one); a running job with this id is followed, an ended one runs again")
	fs.StringVar(&f.account, "account", "default", "account the job counts against (at most N jobs of an account run at once)")
	fs.BoolVar(&f.follow, "follow", false, "show live progress while waiting")
	fs.BoolVar(&f.detach, "detach", false, "return once the job has started")
	fs.StringVar(&f.credentials, "credentials", config.Env("MIGRATE_CREDENTIALS_FILE", ""), "credentials file of MIGRATE_*_KEY=VALUE lines (env MIGRATE_CREDENTIALS_FILE)")
	fs.BoolVar(&f.stripSourcePrefix, "strip-source-prefix", false, "drop the source prefix from keys before prepending the destination prefix")
	fs.IntVar(&f.concurrency, "concurrency", 0, fmt.Sprintf("most object transfers at once per worker (default %d; lowered while the stores throttle)", contract.DefaultConcurrency))
	fs.IntVar(&f.pageSize, "page-size", 0, fmt.Sprintf("objects per listing page (default %d)", contract.DefaultPageSize))
	fs.IntVar(&f.pagesInFlight, "pages-in-flight", 0, fmt.Sprintf("pages copied at once (default %d)", contract.DefaultPagesInFlight))
	fs.StringVar(&f.multipartCutoff, "multipart-cutoff", "", "objects above this size go between stores as parallel parts (default 16MiB)")
	fs.StringVar(&f.partSize, "part-size", "", "part size of multipart copies (default 16MiB; 5MiB to 5GiB, raised for an object that would need more than 10,000 parts)")
	fs.StringVar(&f.copyCutoff, "copy-cutoff", "", "on one store, objects above this size are composed from part copies (default 5GiB, S3's limit)")
	fs.Var(ruleFlag{&f.filters, true}, "include", `copy only keys matching this pattern (rclone's rules: * within a "/" segment, ** across, ?, [a-z], {a,b}; "/" first anchors at the source prefix); repeatable, with --exclude the first matching rule decides`)
	fs.Var(ruleFlag{&f.filters, false}, "exclude", "leave out keys matching this pattern; repeatable (see --include)")
	fs.StringVar(&f.minSize, "min-size", "", "leave out objects smaller than this (10k, 1.5M, 2G: binary units; a bare number is bytes)")
	fs.StringVar(&f.maxSize, "max-size", "", "leave out objects larger than this (as --min-size)")
	fs.StringVar(&f.modifiedAfter, "modified-after", "", "leave out objects last modified before this: RFC 3339 time, date (2026-05-01) or age (24h, 7d: that long before the job starts)")
	fs.StringVar(&f.modifiedBefore, "modified-before", "", "leave out objects last modified at or after this (as --modified-after)")
	fs.StringVar(&f.maxBandwidth, "max-bandwidth", "", "bytes a second the whole job reads from the source, on all workers together: 50MiB, 100M, 1.5G/s (binary units; a bare number is bytes; default no limit)")
	fs.StringVar(&f.maxRequests, "max-requests", "", "requests a second the whole job sends to the source (GET, HEAD, LIST), on all workers together (default no limit)")
	f.jobStore.RegisterFlags(fs)
}

// input checks the flags and builds the job's input, credentials sealed.
// Every problem is reported, with the flag it concerns; the rules are
// jobclient's, the console's API applies the same.
func (f *jobFlags) input(job string) (contract.JobInput, []string) {
	in, problems := f.options().Input(job, jobclient.FlagName)
	if f.follow && f.detach {
		problems = append(problems, "--follow and --detach exclude each other")
	}
	if f.keys != "" {
		file, err := os.Open(f.keys)
		if err != nil {
			problems = append(problems, fmt.Sprintf("--keys: %v", err))
		} else {
			if _, err := migrate.CheckKeyList(file); err != nil {
				problems = append(problems, fmt.Sprintf("--keys %s: %v", f.keys, err))
			}
			_ = file.Close() // read-only
		}
	}
	if len(problems) > 0 {
		return in, problems
	}
	srcCreds, dstCreds, err := migrate.LoadCredentialsFor(os.Getenv, f.credentials, in.Source.Provider)
	if err != nil {
		return in, []string{err.Error()}
	}
	if err := jobclient.Seal(&in, srcCreds, dstCreds); err != nil {
		return in, []string{err.Error()}
	}
	return in, nil
}

// options are the flags that describe the job, as jobclient takes them.
func (f *jobFlags) options() jobclient.Options {
	return jobclient.Options{
		Source: f.source, SourceEndpoint: f.sourceEndpoint, SourceInsecure: f.sourceInsecure, SourceRegion: f.sourceRegion,
		Dest: f.dest, DestEndpoint: f.destEndpoint, DestInsecure: f.destInsecure, DestRegion: f.destRegion,
		Keys: f.keys, Overwrite: f.overwrite, Verify: f.verify, DryRun: f.dryRun, Job: f.job, Account: f.account,
		StripSourcePrefix: f.stripSourcePrefix, Concurrency: f.concurrency, PageSize: f.pageSize, PagesInFlight: f.pagesInFlight,
		MultipartCutoff: f.multipartCutoff, PartSize: f.partSize, CopyCutoff: f.copyCutoff,
		Filters: f.filters, MinSize: f.minSize, MaxSize: f.maxSize, ModifiedAfter: f.modifiedAfter, ModifiedBefore: f.modifiedBefore,
		MaxBandwidth: jobclient.LimitValue(f.maxBandwidth), MaxRequests: jobclient.LimitValue(f.maxRequests),
	}
}

// uploadKeys puts the key list into the job store, where the job's
// listing reads it page by page.
func (f *jobFlags) uploadKeys(job string) (string, error) {
	store, err := f.jobStore.Open()
	if err != nil {
		return "", err
	}
	if err := store.Ensure(background); err != nil {
		return "", fmt.Errorf("job store %s: %w", f.jobStore.S3.Endpoint, err)
	}
	file, err := os.Open(f.keys)
	if err != nil {
		return "", err
	}
	defer func() { _ = file.Close() }() // read-only
	st, err := file.Stat()
	if err != nil {
		return "", err
	}
	key := migrate.KeyListKey(job, fmt.Sprintf("%d.txt", time.Now().UnixNano()))
	_, err = store.Store.Put(background, store.Bucket, key, file, st.Size(),
		objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: "text/plain; charset=utf-8"}})
	return key, err
}

func newStartCommand(c *common) *cobra.Command {
	var f jobFlags
	cmd := command("start", "Start a job and wait for it (--detach returns at once, --follow shows progress)",
		`Starts a job and waits for it: --detach returns at once, --follow shows progress.
A running job with --job's id is followed; an ended one runs again.`,
		`  migrate start --source s3://old-bucket --source-endpoint old.example.com:9000 --dest s3://new-bucket --dest-endpoint new.example.com:9000 --follow
  migrate start --source gs://old-bucket --dest s3://new-bucket --dest-endpoint 127.0.0.1:9000 --dest-insecure --credentials creds.env
  migrate start --source s3://old --source-endpoint h:9000 --dest s3://new --dest-endpoint h:9000 --keys keys.txt --dry-run --json
  migrate start --source s3://old/img/ --source-endpoint h:9000 --dest s3://new --dest-endpoint h:9000 --exclude '/tmp/**' --include '*.{jpg,png}' --min-size 1k --max-size 1.5M --modified-after 2026-01-01 --modified-before 24h
  migrate start --source s3://prod-assets --source-endpoint h:9000 --dest s3://new --dest-endpoint h:9000 --max-bandwidth 50MiB --max-requests 200`,
		cli.NoArgs, func([]string) int { f.common = *c; return runStart(&f) })
	f.register(cmd.Flags())
	return cmd
}

func runStart(f *jobFlags) int {
	job := f.job
	if job == "" {
		job = jobclient.NewJobID()
	}
	in, problems := f.input(job)
	if len(problems) > 0 {
		return f.fail(cli.ExitUsage, job, "%s", strings.Join(problems, "\n  "))
	}
	c, code := f.dial()
	if c == nil {
		return code
	}
	defer c.Close()
	if f.keys != "" {
		key, err := f.uploadKeys(job)
		if err != nil {
			return f.fail(cli.ExitUnavailable, job, "upload the key list: %v", err)
		}
		in.KeyList = key
	}
	run, err := jobclient.Start(background, c, in)
	if err != nil {
		return f.fail(temporalCode(err), job, "start job %s: %v", job, err)
	}
	return f.awaitRun(c, job, run, in.DryRun)
}

// awaitRun waits for a started job (or returns at once with --detach) and
// prints its result.
func (f *jobFlags) awaitRun(c client.Client, job string, run client.WorkflowRun, dryRun bool) int {
	if !f.asJSON {
		fmt.Fprintf(os.Stderr, "job %s started\n  %s\n", job, cli.WorkflowURL(f.temporal.Namespace, run.GetID()))
	}
	if f.detach {
		st := contract.Status{Job: job, State: contract.StateQueued}
		if s, err := jobclient.QueryStatus(background, c, job); err == nil {
			st = s
		}
		if f.asJSON {
			cli.PrintJSON(struct {
				contract.Status
				WorkflowID string `json:"workflowId"`
				RunID      string `json:"runId"`
			}{st, run.GetID(), run.GetRunID()})
		}
		return cli.ExitOK
	}
	stop := make(chan struct{})
	followed := make(chan struct{})
	if f.follow {
		go func() { defer close(followed); follow(c, job, stop) }()
	} else {
		close(followed)
	}
	st, err := jobclient.Result(background, run)
	close(stop)
	<-followed
	if err != nil && st.Job == "" {
		return f.fail(cli.ExitFailed, job, "job %s: %v", job, err)
	}
	return f.printFinal(st)
}
