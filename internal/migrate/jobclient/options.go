// Package jobclient is the client side of Migrate jobs: the options a job
// is started with and their checks, sealing its credentials, and the
// Temporal calls that start, control, list and report on jobs. The migrate
// starter and the console's API both call it, so a job started over HTTP
// is checked by exactly the rules of `migrate start`.
package jobclient

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/objectstore/gcs"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// Options describe a job: the starter's flags, by the same names in JSON
// (camel case: --source-endpoint is sourceEndpoint).
type Options struct {
	Source            string `json:"source"`
	SourceEndpoint    string `json:"sourceEndpoint,omitempty"`
	SourceInsecure    bool   `json:"sourceInsecure,omitempty"`
	SourceRegion      string `json:"sourceRegion,omitempty"`
	Dest              string `json:"dest"`
	DestEndpoint      string `json:"destEndpoint,omitempty"`
	DestInsecure      bool   `json:"destInsecure,omitempty"`
	DestRegion        string `json:"destRegion,omitempty"`
	Keys              string `json:"keys,omitempty"` // a key list: a file to the starter, an uploaded list's id to the API
	Overwrite         string `json:"overwrite,omitempty"`
	Verify            bool   `json:"verify,omitempty"`
	DryRun            bool   `json:"dryRun,omitempty"`
	Job               string `json:"job,omitempty"`
	Account           string `json:"account,omitempty"`
	StripSourcePrefix bool   `json:"stripSourcePrefix,omitempty"`
	Concurrency       int    `json:"concurrency,omitempty"`
	PageSize          int    `json:"pageSize,omitempty"`
	PagesInFlight     int    `json:"pagesInFlight,omitempty"`
	MultipartCutoff   string `json:"multipartCutoff,omitempty"`
	PartSize          string `json:"partSize,omitempty"`
	CopyCutoff        string `json:"copyCutoff,omitempty"`
	// Filters are --include and --exclude in the order given, each
	// {"include": PATTERN} or {"exclude": PATTERN}; the first that matches
	// a key decides.
	Filters        []migrate.FilterRule `json:"filters,omitempty"`
	MinSize        string               `json:"minSize,omitempty"`
	MaxSize        string               `json:"maxSize,omitempty"`
	ModifiedAfter  string               `json:"modifiedAfter,omitempty"`
	ModifiedBefore string               `json:"modifiedBefore,omitempty"`
	// MaxBandwidth (bytes a second: "50MiB", 1048576) and MaxRequests (a
	// second) protect the source across all the job's workers. The API
	// also reads them as max_bandwidth and max_requests.
	MaxBandwidth      LimitValue `json:"maxBandwidth,omitempty"`
	MaxRequests       LimitValue `json:"maxRequests,omitempty"`
	MaxBandwidthSnake LimitValue `json:"max_bandwidth,omitempty"`
	MaxRequestsSnake  LimitValue `json:"max_requests,omitempty"`
	// Now is when an age (--modified-after 24h) counts back from; zero is
	// the time Input is called.
	Now time.Time `json:"-"`
}

// LimitValue is a limit as given: a flag's text, or in JSON a string or a
// number.
type LimitValue string

// UnmarshalJSON takes a string ("50MiB") or a number (1048576) as written.
func (v *LimitValue) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*v = LimitValue(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want a number or a string, not %s", b)
	}
	*v = LimitValue(n.String())
	return nil
}

// limits reads --max-bandwidth and --max-requests into the settings.
func (o Options) limits(set *contract.Settings, n func(string) string, bad func(string, ...any)) {
	for _, l := range []struct {
		option      string
		value, also LimitValue
		parse       func(string) (int64, error)
		into        *int64
	}{
		{"max-bandwidth", o.MaxBandwidth, o.MaxBandwidthSnake, migrate.ParseBandwidth, &set.MaxBandwidth},
		{"max-requests", o.MaxRequests, o.MaxRequestsSnake, migrate.ParseRequests, &set.MaxRequests},
	} {
		value := l.value
		if value == "" {
			value = l.also
		} else if l.also != "" && l.also != value {
			bad("%s %q and %s %q: give one", n(l.option), l.value, strings.ReplaceAll(l.option, "-", "_"), l.also)
			continue
		}
		if value == "" {
			continue
		}
		v, err := l.parse(string(value))
		if err != nil {
			bad("%s: %v", n(l.option), err)
			continue
		}
		*l.into = v
	}
}

// Namer spells an option's name for the caller: the starter's "--part-size",
// the API's "partSize". Options are named in flag spelling ("part-size").
type Namer func(option string) string

// FlagName is the starter's spelling.
func FlagName(option string) string { return "--" + option }

// JSONName is the API's spelling: part-size is partSize.
func JSONName(option string) string {
	parts := strings.Split(option, "-")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// Input checks the options and builds the job's input, credentials not yet
// sealed. Every problem is reported, naming its option with name. The key
// list (o.Keys) is checked by the caller, which knows where it is; here
// only its rule against a source prefix.
func (o Options) Input(job string, name Namer) (contract.JobInput, []string) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	n := func(option string) string { return name(option) }
	in := contract.JobInput{Job: job, Account: o.Account, Verify: o.Verify, DryRun: o.DryRun, StripSourcePrefix: o.StripSourcePrefix}
	side := func(side, loc, endpoint, region string, insecure bool) contract.Endpoint {
		e := contract.Endpoint{Endpoint: endpoint, Secure: !insecure, Region: region}
		parse := migrate.ParseLocation
		if side == "source" {
			parse = migrate.ParseSourceLocation // s3:// or gs://
		}
		switch {
		case loc == "":
			bad("%s is required (s3://BUCKET[/PREFIX])", n(side))
		default:
			l, err := parse(loc)
			if err != nil {
				bad("%s: %v", n(side), err)
			}
			e.Location = l
		}
		switch {
		case e.Provider == migrate.ProviderGCS:
			// Google Cloud Storage is reached at its own endpoint, over https.
			if endpoint != "" || insecure || region != "" {
				bad("%s %s is on Google Cloud Storage: %s, %s and %s do not apply", n(side), loc, n(side+"-endpoint"), n(side+"-insecure"), n(side+"-region"))
			}
			e.Secure = true
		case endpoint == "":
			bad("%s is required (host:port)", n(side+"-endpoint"))
		case strings.Contains(endpoint, "://"):
			bad("%s %q: give host:port without a scheme (%s for plain HTTP)", n(side+"-endpoint"), endpoint, n(side+"-insecure"))
		default:
			// What the S3 client refuses (a host name with "_", a path) is
			// refused here, naming the option, not by the job's precheck.
			if _, err := s3.New(s3.Config{Endpoint: endpoint, Secure: !insecure, Region: region}); err != nil {
				bad("%s %q: %v", n(side+"-endpoint"), endpoint, err)
			}
		}
		return e
	}
	in.Source = side("source", o.Source, o.SourceEndpoint, o.SourceRegion, o.SourceInsecure)
	in.Dest = side("dest", o.Dest, o.DestEndpoint, o.DestRegion, o.DestInsecure)
	overwrite := o.Overwrite
	if overwrite == "" {
		overwrite = string(migrate.OverwriteIfDifferent)
	}
	var err error
	if in.Overwrite, err = migrate.ParseOverwrite(overwrite); err != nil {
		bad("%v", err) // it names --overwrite
	}
	if err := migrate.CheckJobID(job); err != nil {
		bad("%s: %v", n("job"), err)
	}
	if o.Account == "" {
		bad("%s must not be empty", n("account"))
	}
	if in.Source.Bucket != "" && in.Source.Bucket == in.Dest.Bucket && in.Source.Endpoint == in.Dest.Endpoint &&
		strings.HasPrefix(in.Dest.Prefix, in.Source.Prefix) {
		bad("%s %s lies inside %s %s on the same store: the copies would be listed and copied again", n("dest"), in.Dest.Location, n("source"), in.Source.Location)
	}
	in.Settings = contract.Settings{Concurrency: o.Concurrency, PageSize: o.PageSize, PagesInFlight: o.PagesInFlight}
	for _, s := range []struct {
		option, value string
		into          *int64
	}{{"multipart-cutoff", o.MultipartCutoff, &in.Settings.MultipartCutoff}, {"part-size", o.PartSize, &in.Settings.PartSize}, {"copy-cutoff", o.CopyCutoff, &in.Settings.CopyCutoff}} {
		if s.value == "" {
			continue
		}
		size, err := migrate.ParseSize(s.value)
		if err != nil {
			bad("%s: %v", n(s.option), err)
		}
		*s.into = size
	}
	o.limits(&in.Settings, n, bad)
	if err := in.Settings.Check(); err != nil {
		bad("%v", err)
	}
	in.Filter = o.filter(n, bad)
	if o.Keys != "" && in.Filter != nil && in.Filter.OnObjects() {
		bad("%s: a key list has no sizes or times before it is copied, so %s, %s, %s and %s need a listed source",
			n("keys"), n("min-size"), n("max-size"), n("modified-after"), n("modified-before"))
	}
	if o.Keys != "" && in.Source.Prefix != "" {
		bad("%s with %s %s: the key list names whole source keys, so the source takes no prefix (give s3://%s)", n("keys"), n("source"), in.Source.Location, in.Source.Bucket)
	}
	// The engine's own errors name the flags (--part-size): spell them as
	// the caller does.
	for i, p := range problems {
		problems[i] = flagMention.ReplaceAllStringFunc(p, func(m string) string { return name(m[2:]) })
	}
	return in, problems
}

// filter builds the job's filter (nil: none) from the options, reporting
// each problem with bad. An age (--modified-after 24h) becomes the time it
// names now, so the job and its syncs keep one bound.
func (o Options) filter(n func(string) string, bad func(string, ...any)) *migrate.Filter {
	var f migrate.Filter
	for i, r := range o.Filters {
		p, include := r.Pattern()
		option := "exclude"
		if include {
			option = "include"
		}
		switch {
		case (r.Include == "") == (r.Exclude == ""):
			bad("filters[%d]: give exactly one of include and exclude, with a pattern", i)
			continue
		default:
			if _, err := migrate.CompileGlob(p); err != nil {
				bad("%s %q (filter rule %d): %v", n(option), p, i+1, err)
				continue
			}
		}
		f.Rules = append(f.Rules, r)
	}
	for _, s := range []struct {
		option, value string
		into          **int64
	}{{"min-size", o.MinSize, &f.MinSize}, {"max-size", o.MaxSize, &f.MaxSize}} {
		if s.value == "" {
			continue
		}
		size, err := migrate.ParseSize(s.value)
		if err != nil {
			bad("%s: %v", n(s.option), err)
			continue
		}
		*s.into = &size
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	for _, t := range []struct {
		option, value string
		into          *time.Time
	}{{"modified-after", o.ModifiedAfter, &f.ModifiedAfter}, {"modified-before", o.ModifiedBefore, &f.ModifiedBefore}} {
		if t.value == "" {
			continue
		}
		at, err := migrate.ParseFilterTime(t.value, now)
		if err != nil {
			bad("%s: %v", n(t.option), err)
			continue
		}
		*t.into = at.UTC()
	}
	if f.IsZero() {
		return nil
	}
	if err := f.Check(); err != nil {
		bad("%v", err) // the bounds against each other; it names the flags
	}
	return &f
}

// flagMention is a flag named in an error: --part-size.
var flagMention = regexp.MustCompile(`--[a-z]+(?:-[a-z]+)*`)

// Seal seals both sides' credentials into in, each bound to its job, side
// and store (provider, endpoint, bucket, prefix, pinned addresses), with the
// codec keys (CODEC_KEYS): only the migrate workers open them. A GCS
// source's key file is checked to be one first. Errors never hold a key.
func Seal(in *contract.JobInput, src, dst migrate.Credentials) error {
	if src.GCSKey != "" {
		if _, err := gcs.CredentialsType([]byte(src.GCSKey)); err != nil {
			return fmt.Errorf("%s: %v", migrate.EnvSourceGCSCredentialsFile, err)
		}
	}
	keys, err := keyring.Codec.Load()
	if err != nil {
		return fmt.Errorf("codec keys (they seal the credentials): %v", err)
	}
	if in.Source.Credentials, err = migrate.SealCredentials(keys, src, in.Job, migrate.SideSource, in.Source.Store()); err != nil {
		return err
	}
	if in.Dest.Credentials, err = migrate.SealCredentials(keys, dst, in.Job, migrate.SideDest, in.Dest.Store()); err != nil {
		return err
	}
	return nil
}
