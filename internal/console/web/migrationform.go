package web

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// jobField is one input of the start form, named as the API's body names
// it (jobclient.JSONName), so the API's messages name the form's fields.
type jobField struct {
	Name, Label, Hint, Input string // Input: text, checkbox, number, password, select
	Choices                  []string
}

// jobFields are the start form's options: those a person starts a copy
// between two buckets with (the API takes the rest).
var jobFields = []jobField{
	{Name: "source", Label: "Source", Hint: "s3://BUCKET[/PREFIX] or gs://BUCKET[/PREFIX]", Input: "text"},
	{Name: "sourceEndpoint", Label: "Source endpoint", Hint: "host:port, without a scheme", Input: "text"},
	{Name: "sourceRegion", Label: "Source region", Input: "text"},
	{Name: "sourceInsecure", Label: "Source over plain HTTP", Input: "checkbox"},
	{Name: "dest", Label: "Destination", Hint: "s3://BUCKET[/PREFIX]", Input: "text"},
	{Name: "destEndpoint", Label: "Destination endpoint", Hint: "host:port, without a scheme", Input: "text"},
	{Name: "destRegion", Label: "Destination region", Input: "text"},
	{Name: "destInsecure", Label: "Destination over plain HTTP", Input: "checkbox"},
	{Name: "overwrite", Label: "Overwrite", Input: "select",
		Choices: []string{string(migrate.OverwriteIfDifferent), string(migrate.OverwriteNever), string(migrate.OverwriteAlways)}},
	{Name: "verify", Label: "Verify every copy", Input: "checkbox"},
	{Name: "dryRun", Label: "Dry run (write nothing)", Input: "checkbox"},
	{Name: "concurrency", Label: "Concurrency", Hint: "empty: the default", Input: "number"},
	{Name: "job", Label: "Job id", Hint: "empty: a new one", Input: "text"},
	{Name: "account", Label: "Account", Hint: "empty: default", Input: "text"},
}

// credentialFields are the S3 keys of both sides, by the names the API's
// body and the starter's environment give them. Never rendered with a value.
var credentialFields = []jobField{
	{Name: migrate.EnvSourceAccessKey, Label: "Source access key"},
	{Name: migrate.EnvSourceSecretKey, Label: "Source secret key"},
	{Name: migrate.EnvSourceSessionToken, Label: "Source session token", Hint: "only for temporary credentials"},
	{Name: migrate.EnvDestAccessKey, Label: "Destination access key"},
	{Name: migrate.EnvDestSecretKey, Label: "Destination secret key"},
	{Name: migrate.EnvDestSessionToken, Label: "Destination session token", Hint: "only for temporary credentials"},
}

// jobActions are a job's buttons (Name is the route's last part); the
// job refuses, with its reason, what makes no sense in its state.
var jobActions = []jobField{
	{Name: contract.PauseUpdate, Label: "Pause"},
	{Name: contract.ResumeUpdate, Label: "Resume"},
	{Name: contract.AbortUpdate, Label: "Abort"},
	{Name: contract.RedriveUpdate, Label: "Redrive the failed objects"},
}

// migrationForm is the start form: the values posted (credentials
// removed) and the problems by field.
type migrationForm struct {
	Values url.Values
	Errors map[string]string
}

func (f migrationForm) Value(name string) string { return f.Values.Get(name) }
func (f migrationForm) Checked(name string) bool { return f.Values.Get(name) != "" }
func (f migrationForm) Error(name string) string { return f.Errors[name] }

// options reads the form as the API reads its body: the options and the
// credentials given (empty fields are not given).
func (f migrationForm) options() (jobclient.Options, map[string]string, []string) {
	v := func(name string) string { return strings.TrimSpace(f.Values.Get(name)) }
	on := func(name string) bool { return f.Values.Get(name) != "" }
	o := jobclient.Options{
		Source: v("source"), SourceEndpoint: v("sourceEndpoint"), SourceRegion: v("sourceRegion"), SourceInsecure: on("sourceInsecure"),
		Dest: v("dest"), DestEndpoint: v("destEndpoint"), DestRegion: v("destRegion"), DestInsecure: on("destInsecure"),
		Overwrite: v("overwrite"), Verify: on("verify"), DryRun: on("dryRun"), Job: v("job"), Account: v("account"),
	}
	var problems []string
	if c := v("concurrency"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil {
			problems = append(problems, "concurrency: want a whole number, got "+strconv.Quote(c))
		}
		o.Concurrency = n
	}
	credentials := map[string]string{}
	for _, c := range credentialFields {
		// Keys are taken as typed: a space may be part of a secret.
		if s := f.Values.Get(c.Name); s != "" {
			credentials[c.Name] = s
		}
	}
	return o, credentials, problems
}

// rate words a job's measured rate: objects and bytes a second.
func rate(objects, bytes float64) string {
	if objects == 0 && bytes == 0 {
		return "not measured yet"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for bytes >= 1024 && i < len(units)-1 {
		bytes /= 1024
		i++
	}
	return strconv.FormatFloat(objects, 'f', 1, 64) + " objects/s, " + strconv.FormatFloat(bytes, 'f', 1, 64) + " " + units[i] + "/s"
}
