package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// runImportCatalog imports an existing CDN bucket into Publish: its
// libraries (name/version/file under the source prefix) are copied byte for
// byte into the files bucket (and the mirror), never overwriting, and the
// publish pool then writes their metadata from the stored bytes.
func newImportCatalogCommand(c *common) *cobra.Command {
	var f importFlags
	cmd := command("import-catalog", "Import an existing CDN bucket into Publish byte for byte, then publish its versions",
		`Copies every NAME/VERSION/FILE under the source prefix into Publish's files bucket
(and mirror) byte for byte, then publishes those versions from the stored bytes,
so every SRI stays valid. Source credentials: MIGRATE_SOURCE_ACCESS_KEY/_SECRET_KEY;
the files bucket's: MIGRATE_DEST_* or else S3_ACCESS_KEY/S3_SECRET_KEY; the
mirror's: MIRROR_S3_* or the primary's.`,
		"  migrate import-catalog --source s3://old-cdn/ajax/libs/ --source-endpoint old.example.com:9000 --follow",
		cli.NoArgs, func([]string) int { return runImportCatalog(c, f) })
	fs := cmd.Flags()
	fs.StringVar(&f.src, "source", "", "the old CDN: s3://BUCKET[/PREFIX], where PREFIX holds NAME/VERSION/FILE (required)")
	fs.StringVar(&f.srcEndpoint, "source-endpoint", "", "its store, host:port (required)")
	fs.BoolVar(&f.srcInsecure, "source-insecure", false, "plain HTTP to the source")
	fs.StringVar(&f.srcRegion, "source-region", "", "source region")
	fs.StringVar(&f.job, "job", "", "import id (default: a new one); its copy jobs are ID-files and ID-mirror")
	fs.StringVar(&f.credsFile, "credentials", config.Env("MIGRATE_CREDENTIALS_FILE", ""), "credentials file (env MIGRATE_CREDENTIALS_FILE)")
	fs.BoolVar(&f.watch, "follow", false, "show the copy's progress")
	fs.BoolVar(&f.detach, "detach", false, "return once started")
	f.storage.RegisterFlags(fs)
	return cmd
}

// importFlags are import-catalog's flags.
type importFlags struct {
	src, srcEndpoint, srcRegion, job, credsFile string
	srcInsecure, watch, detach                  bool
	storage                                     config.Storage
}

func runImportCatalog(c *common, f importFlags) int {
	src, srcEndpoint, srcRegion, job, credsFile := f.src, f.srcEndpoint, f.srcRegion, f.job, f.credsFile
	srcInsecure, watch, detach, storage := f.srcInsecure, f.watch, f.detach, f.storage
	if job == "" {
		job = "import-" + strings.TrimPrefix(jobclient.NewJobID(), "m-")
	}
	var problems []string
	loc, err := migrate.ParseLocation(src)
	if err != nil {
		problems = append(problems, "--source: "+err.Error())
	}
	if srcEndpoint == "" {
		problems = append(problems, "--source-endpoint is required (host:port)")
	}
	if err := migrate.CheckJobID(job + "-mirror"); err != nil {
		problems = append(problems, "--job: "+err.Error())
	}
	if watch && detach {
		problems = append(problems, "--follow and --detach exclude each other")
	}
	if len(problems) > 0 {
		return c.fail(cli.ExitUsage, job, "%s", strings.Join(problems, "\n  "))
	}
	// The files bucket's keys default to the primary store's (S3_*).
	getenv := func(name string) string {
		v := os.Getenv(name)
		switch {
		case v != "":
			return v
		case name == migrate.EnvDestAccessKey:
			return storage.Primary.AccessKey
		case name == migrate.EnvDestSecretKey:
			return storage.Primary.SecretKey
		}
		return ""
	}
	srcCreds, dstCreds, err := migrate.LoadCredentials(getenv, credsFile)
	if err != nil {
		return c.fail(cli.ExitUsage, job, "%v", err)
	}
	keys, err := keyring.Codec.Load()
	if err != nil {
		return c.fail(cli.ExitUsage, job, "codec keys (they seal the credentials): %v", err)
	}
	source := contract.Endpoint{Endpoint: srcEndpoint, Secure: !srcInsecure, Region: srcRegion, Location: loc}
	mk := func(id string, dest contract.Endpoint, destCreds migrate.Credentials) (contract.JobInput, error) {
		in := contract.JobInput{Job: id, Account: "catalog-import", Source: source, Dest: dest, StripSourcePrefix: true,
			// Never overwrite: a file Publish already holds keeps its bytes, and its SRI.
			Overwrite: migrate.OverwriteNever}
		var err error
		if in.Source.Credentials, err = migrate.SealCredentials(keys, srcCreds, id, migrate.SideSource, in.Source.Store()); err != nil {
			return in, err
		}
		in.Dest.Credentials, err = migrate.SealCredentials(keys, destCreds, id, migrate.SideDest, in.Dest.Store())
		return in, err
	}
	p := storage.Primary
	in := contract.ImportInput{Import: job}
	if in.Files, err = mk(job+"-files", contract.Endpoint{Endpoint: p.Endpoint, Secure: p.Secure, Region: p.Region,
		Location: migrate.Location{Bucket: storage.Buckets.Files}}, dstCreds); err != nil {
		return c.fail(cli.ExitUsage, job, "%v", err)
	}
	m := storage.Mirror
	if m.Endpoint == "" {
		m = p
	} else if m.AccessKey == "" {
		m.AccessKey, m.SecretKey = p.AccessKey, p.SecretKey
	}
	if m.Endpoint != p.Endpoint || storage.Buckets.Mirror != storage.Buckets.Files {
		mirror, err := mk(job+"-mirror", contract.Endpoint{Endpoint: m.Endpoint, Secure: m.Secure, Region: m.Region,
			Location: migrate.Location{Bucket: storage.Buckets.Mirror}}, migrate.Credentials{AccessKey: m.AccessKey, SecretKey: m.SecretKey})
		if err != nil {
			return c.fail(cli.ExitUsage, job, "%v", err)
		}
		in.Mirror = &mirror
	}
	tc, code := c.dial()
	if tc == nil {
		return code
	}
	defer tc.Close()
	run, err := tc.ExecuteWorkflow(background, client.StartWorkflowOptions{
		ID: contract.MigrationCatalogImportWorkflowID(job), TaskQueue: contract.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(contract.JobKey.ValueSet(job), contract.SourceBucketKey.ValueSet(loc.Bucket)),
		StaticSummary:            "Import " + source.String() + " into Publish",
	}, contract.WorkflowTypeMigrationCatalogImport, in)
	if err != nil {
		return c.fail(temporalCode(err), job, "start import %s: %v", job, err)
	}
	if !c.asJSON {
		fmt.Fprintf(os.Stderr, "import %s started\n  %s\n", job, cli.WorkflowURL(c.temporal.Namespace, run.GetID()))
	}
	if detach {
		if c.asJSON {
			cli.PrintJSON(map[string]string{"import": job, "workflowId": run.GetID(), "runId": run.GetRunID()})
		}
		return cli.ExitOK
	}
	stop, followed := make(chan struct{}), make(chan struct{})
	if watch {
		go func() { defer close(followed); follow(tc, in.Files.Job, stop) }()
	} else {
		close(followed)
	}
	var out contract.ImportResult
	err = run.Get(background, &out)
	close(stop)
	<-followed
	if err != nil {
		return c.fail(cli.ExitFailed, job, "import %s: %s", job, rootCause(err))
	}
	if c.asJSON {
		cli.PrintJSON(out)
		return cli.ExitOK
	}
	fmt.Printf("import %s: %d files copied (%s), %d already there\n", job, out.Files.Copied, migrate.HumanBytes(float64(out.Files.Bytes)), out.Files.Skipped)
	fmt.Printf("  published %d versions of %d packages (%d files); %d versions were published already\n",
		out.Rebuild.Versions, out.Rebuild.Packages, out.Rebuild.Files, out.Rebuild.AlreadyPublished)
	for _, s := range out.Rebuild.Skipped {
		fmt.Printf("  skipped %s\n", s)
	}
	return cli.ExitOK
}

// rootCause is the message of the innermost application error in err's
// chain: what went wrong, without every layer that passed it on.
func rootCause(err error) string {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		var app *temporal.ApplicationError
		if errors.As(e, &app) {
			msg = app.Message()
			e = app
		}
	}
	return msg
}
