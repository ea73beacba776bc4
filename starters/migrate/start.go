package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/gcs"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
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
}

func (f *jobFlags) register(fs *flag.FlagSet) {
	f.common.register(fs)
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
	f.jobStore.RegisterFlags(fs)
}

// input checks the flags and builds the job's input, credentials sealed.
// Every problem is reported, with the flag it concerns.
func (f *jobFlags) input(job string) (contract.JobInput, []string) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	in := contract.JobInput{Job: job, Account: f.account, Verify: f.verify, DryRun: f.dryRun, StripSourcePrefix: f.stripSourcePrefix}
	side := func(name, loc, endpoint, region string, insecure bool) contract.Endpoint {
		e := contract.Endpoint{Endpoint: endpoint, Secure: !insecure, Region: region}
		parse := migrate.ParseLocation
		if name == "source" {
			parse = migrate.ParseSourceLocation // s3:// or gs://
		}
		switch {
		case loc == "":
			bad("--%s is required (s3://BUCKET[/PREFIX])", name)
		default:
			l, err := parse(loc)
			if err != nil {
				bad("--%s: %v", name, err)
			}
			e.Location = l
		}
		switch {
		case e.Provider == migrate.ProviderGCS:
			// Google Cloud Storage is reached at its own endpoint, over https.
			if endpoint != "" || insecure || region != "" {
				bad("--%s %s is on Google Cloud Storage: --%s-endpoint, --%s-insecure and --%s-region do not apply", name, loc, name, name, name)
			}
			e.Secure = true
		case endpoint == "":
			bad("--%s-endpoint is required (host:port)", name)
		case strings.Contains(endpoint, "://"):
			bad("--%s-endpoint %q: give host:port without a scheme (--%s-insecure for plain HTTP)", name, endpoint, name)
		default:
			// What the S3 client refuses (a host name with "_", a path) is
			// refused here, naming the flag, not by the job's precheck.
			if _, err := s3.New(s3.Config{Endpoint: endpoint, Secure: !insecure, Region: region}); err != nil {
				bad("--%s-endpoint %q: %v", name, endpoint, err)
			}
		}
		return e
	}
	in.Source = side("source", f.source, f.sourceEndpoint, f.sourceRegion, f.sourceInsecure)
	in.Dest = side("dest", f.dest, f.destEndpoint, f.destRegion, f.destInsecure)
	var err error
	if in.Overwrite, err = migrate.ParseOverwrite(f.overwrite); err != nil {
		bad("%v", err)
	}
	if f.follow && f.detach {
		bad("--follow and --detach exclude each other")
	}
	if err := migrate.CheckJobID(job); err != nil {
		bad("--job: %v", err)
	}
	if f.account == "" {
		bad("--account must not be empty")
	}
	if in.Source.Bucket != "" && in.Source.Bucket == in.Dest.Bucket && in.Source.Endpoint == in.Dest.Endpoint &&
		strings.HasPrefix(in.Dest.Prefix, in.Source.Prefix) {
		bad("--dest %s lies inside --source %s on the same store: the copies would be listed and copied again", in.Dest.Location, in.Source.Location)
	}
	in.Settings = contract.Settings{Concurrency: f.concurrency, PageSize: f.pageSize, PagesInFlight: f.pagesInFlight}
	for _, s := range []struct {
		flag, value string
		into        *int64
	}{{"multipart-cutoff", f.multipartCutoff, &in.Settings.MultipartCutoff}, {"part-size", f.partSize, &in.Settings.PartSize}, {"copy-cutoff", f.copyCutoff, &in.Settings.CopyCutoff}} {
		if s.value == "" {
			continue
		}
		n, err := migrate.ParseSize(s.value)
		if err != nil {
			bad("--%s: %v", s.flag, err)
		}
		*s.into = n
	}
	if err := in.Settings.Check(); err != nil {
		bad("%v", err)
	}
	if f.keys != "" && in.Source.Prefix != "" {
		bad("--keys with --source %s: the key list names whole source keys, so the source takes no prefix (give s3://%s)", in.Source.Location, in.Source.Bucket)
	}
	if f.keys != "" {
		file, err := os.Open(f.keys)
		if err != nil {
			bad("--keys: %v", err)
		} else {
			if _, err := migrate.CheckKeyList(file); err != nil {
				bad("--keys %s: %v", f.keys, err)
			}
			file.Close()
		}
	}
	if len(problems) > 0 {
		return in, problems
	}
	srcCreds, dstCreds, err := migrate.LoadCredentialsFor(os.Getenv, f.credentials, in.Source.Provider)
	if err != nil {
		return in, []string{err.Error()}
	}
	if srcCreds.GCSKey != "" {
		if _, err := gcs.CredentialsType([]byte(srcCreds.GCSKey)); err != nil {
			return in, []string{fmt.Sprintf("%s: %v", migrate.EnvSourceGCSCredentialsFile, err)}
		}
	}
	keys, err := keyring.Codec.Load()
	if err != nil {
		return in, []string{fmt.Sprintf("codec keys (they seal the credentials): %v", err)}
	}
	if in.Source.Credentials, err = migrate.SealCredentials(keys, srcCreds, job, migrate.SideSource); err != nil {
		return in, []string{err.Error()}
	}
	if in.Dest.Credentials, err = migrate.SealCredentials(keys, dstCreds, job, migrate.SideDest); err != nil {
		return in, []string{err.Error()}
	}
	return in, nil
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
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return "", err
	}
	key := migrate.KeyListKey(job, fmt.Sprintf("%d.txt", time.Now().UnixNano()))
	_, err = store.Store.Put(background, store.Bucket, key, file, st.Size(),
		objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: "text/plain; charset=utf-8"}})
	return key, err
}

func newJobID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "m-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

func runStart(args []string) int {
	fs := flag.NewFlagSet("migrate start", flag.ContinueOnError)
	var f jobFlags
	f.register(fs)
	if _, ok := parseArgs(fs, args); !ok {
		return cli.ExitUsage
	}
	job := f.job
	if job == "" {
		job = newJobID()
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
	run, err := startJob(c, in)
	if err != nil {
		return f.fail(temporalCode(err), job, "start job %s: %v", job, err)
	}
	return f.awaitRun(c, job, run, in.DryRun)
}

// startJob starts a job's workflow; a running job with the same id is
// followed instead, an ended one runs again.
func startJob(c client.Client, in contract.JobInput) (client.WorkflowRun, error) {
	return c.ExecuteWorkflow(background, client.StartWorkflowOptions{
		ID:                       contract.MigrationWorkflowID(in.Job),
		TaskQueue:                contract.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(contract.JobKey.ValueSet(in.Job),
			contract.SourceBucketKey.ValueSet(in.Source.Bucket), contract.DestBucketKey.ValueSet(in.Dest.Bucket)),
		Memo:          map[string]any{contract.MemoState: contract.StateQueued, contract.MemoAccount: in.Account, contract.MemoSummary: summary(in)},
		StaticSummary: "Migrate " + summary(in),
		StaticDetails: staticDetails(in),
	}, contract.WorkflowTypeMigration, in)
}

func summary(in contract.JobInput) string {
	s := in.Source.String() + " → " + in.Dest.String()
	if in.DryRun {
		s += " (dry run)"
	}
	return s
}

func staticDetails(in contract.JobInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Job** %s (account %s)\n\n", in.Job, in.Account)
	fmt.Fprintf(&b, "- source: %s\n- destination: %s\n- overwrite: %s\n", in.Source, in.Dest, in.Overwrite)
	if in.KeyList != "" {
		b.WriteString("- keys: from a key list\n")
	}
	if !in.Range.IsZero() {
		fmt.Fprintf(&b, "- range: %s\n", in.Range)
	}
	if in.Verify {
		b.WriteString("- verify: every copy is compared with its source\n")
	}
	if in.DryRun {
		b.WriteString("- dry run: nothing is written\n")
	}
	b.WriteString("\nCredentials are sealed; only the migrate workers open them.")
	return b.String()
}

// awaitRun waits for a started job (or returns at once with --detach) and
// prints its result.
func (f *jobFlags) awaitRun(c client.Client, job string, run client.WorkflowRun, dryRun bool) int {
	if !f.asJSON {
		fmt.Fprintf(os.Stderr, "job %s started\n  %s\n", job, cli.WorkflowURL(f.temporal.Namespace, run.GetID()))
	}
	if f.detach {
		st := contract.Status{Job: job, State: contract.StateQueued}
		if s, err := queryStatus(c, job); err == nil {
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
	st, err := result(run)
	close(stop)
	<-followed
	if err != nil && st.Job == "" {
		return f.fail(cli.ExitFailed, job, "job %s: %v", job, err)
	}
	return f.printFinal(st)
}

// result waits for a job run and returns its status, also when it failed
// (the failure carries the status).
func result(run client.WorkflowRun) (contract.Status, error) {
	var st contract.Status
	err := run.Get(background, &st)
	if err == nil {
		return st, nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.HasDetails() && app.Details(&st) == nil {
		return st, nil
	}
	return contract.Status{}, err
}
