package console

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
)

// A start body's errors name the field, and never quote the body (whose
// credentials may be what is malformed).
func TestDecodeStrictNamesTheFieldAndQuotesNothing(t *testing.T) {
	const secret = "s3cr3t-KEY-value"
	for _, c := range []struct{ body, want string }{
		{`{"sorce":"s3://a"}`, "sorce: unknown field"},
		{`{"pageSize":"ten"}`, "pageSize: want int"},
		{`{"credentials":{"MIGRATE_SOURCE_SECRET_KEY":` + secret + `}}`, "not valid JSON"},
		{`{"credentials":{"MIGRATE_SOURCE_SECRET_KEY":"` + secret, "(document)"},
	} {
		var req startRequest
		err := decodeStrict([]byte(c.body), &req)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.body, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: the error quotes the body: %v", c.body, err)
		}
	}
}

// startBody is a POST /api/v1/migrations body with both sides' keys.
func startBody(source, sourceEndpoint, dest, destEndpoint string) string {
	return `{"source":"` + source + `","sourceEndpoint":"` + sourceEndpoint + `","dest":"` + dest + `","destEndpoint":"` + destEndpoint + `",
		"credentials":{"MIGRATE_SOURCE_ACCESS_KEY":"a","MIGRATE_SOURCE_SECRET_KEY":"s","MIGRATE_DEST_ACCESS_KEY":"a","MIGRATE_DEST_SECRET_KEY":"s"}}`
}

// A job started over the API reaches only what the operator allows: the
// metadata service, Temporal on loopback and in-cluster names are refused
// before anything starts, each naming its field and nothing about the
// network (the reason goes to the console's log).
func TestStartRefusesEndpointsNotAllowed(t *testing.T) {
	t.Setenv("MIGRATE_ALLOWED_ENDPOINTS", "203.0.113.5:9000")
	srv, _ := newTestServer(t)
	for _, c := range []struct{ body, field string }{
		{startBody("s3://src-a", "203.0.113.5:9000", "s3://dst-b", "169.254.169.254:80"), "destEndpoint"},
		{startBody("s3://src-a", "127.0.0.1:7233", "s3://dst-b", "203.0.113.5:9000"), "sourceEndpoint"},
		{startBody("s3://src-a", "redis-anywhere:6379", "s3://dst-b", "203.0.113.5:9000"), "sourceEndpoint"},
		{startBody("s3://src-a", "203.0.113.5:9000", "s3://dst-b", "temporal-frontend:7233"), "destEndpoint"},
		{startBody("s3://src-a", "203.0.113.5:9000", "s3://dst-b", "[fd00::7]:9000"), "destEndpoint"},
	} {
		resp, env := call(t, srv, "POST", "/api/v1/migrations", rwSecret, c.body)
		wantError(t, resp, env, http.StatusBadRequest, CodeInvalid, c.field)
		if len(env.Errors) != 1 || !strings.Contains(env.Errors[0].Message, "endpoint not allowed") {
			t.Errorf("%s: %+v, want one error: endpoint not allowed", c.body, env.Errors)
		}
	}
}

// Over the API a gs:// source is read with the workers' own Google
// identity only for a bucket the operator lists; any other needs its
// service-account key in the body.
func TestStartRefusesAGCSSourceWithoutAKey(t *testing.T) {
	t.Setenv("MIGRATE_ALLOWED_ENDPOINTS", "203.0.113.5:9000")
	t.Setenv("MIGRATE_GCS_ADC_BUCKETS", "public-assets")
	srv, _ := newTestServer(t)
	body := `{"source":"gs://private-assets","dest":"s3://dst-b","destEndpoint":"203.0.113.5:9000",
		"credentials":{"MIGRATE_DEST_ACCESS_KEY":"a","MIGRATE_DEST_SECRET_KEY":"s"}}`
	resp, env := call(t, srv, "POST", "/api/v1/migrations", rwSecret, body)
	wantError(t, resp, env, http.StatusBadRequest, CodeInvalid, "MIGRATE_GCS_ADC_BUCKETS")
}

// A malformed MIGRATE_ALLOWED_ENDPOINTS stops the console at its start,
// naming the variable, before it dials anything: not a console that then
// refuses every migration with a 500.
func TestMalformedAllowlistStopsTheConsole(t *testing.T) {
	t.Setenv("CONSOLE_TOKENS", "ops:"+strings.Repeat("s", 32))
	t.Setenv(jobclient.EnvAllowedEndpoints, "minio.internal:x9000")
	var st Settings
	st.JobStore.S3.Endpoint = "127.0.0.1:9000"
	err := Run(t.Context(), st, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), jobclient.EnvAllowedEndpoints) {
		t.Fatalf("Run with a malformed allowlist: %v, want an error naming %s", err, jobclient.EnvAllowedEndpoints)
	}
}

// A job's filters over the API are checked by the starter's rules, each
// problem naming its field (and, for a pattern, its rule and where it is
// wrong); an unknown field in a rule is refused by name.
func TestStartRefusesBadFilters(t *testing.T) {
	t.Setenv("MIGRATE_ALLOWED_ENDPOINTS", "203.0.113.5:9000")
	srv, _ := newTestServer(t)
	with := func(fields string) string {
		return strings.Replace(startBody("s3://src-a", "203.0.113.5:9000", "s3://dst-b", "203.0.113.5:9000"), "{", "{"+fields+",", 1)
	}
	for _, c := range []struct{ body, want string }{
		{with(`"filters":[{"include":"*.js"},{"exclude":"a["}]`), `exclude "a[" (filter rule 2): at character 2`},
		{with(`"filters":[{"include":"a","exclude":"b"}]`), "filters[0]: give exactly one of include and exclude"},
		{with(`"filters":[{"includ":"a"}]`), "includ: unknown field"},
		{with(`"minSize":"ten"`), `minSize: size "ten"`},
		{with(`"modifiedBefore":"tomorrow"`), `modifiedBefore: "tomorrow"`},
		{with(`"max_bandwidth":"10XB"`), `maxBandwidth: bandwidth "10XB": want bytes a second`},
		{with(`"maxRequests":-5`), `maxRequests: requests "-5": not negative`},
		{with(`"max_requests":true`), `want a number or a string, not true`},
	} {
		resp, env := call(t, srv, "POST", "/api/v1/migrations", rwSecret, c.body)
		wantError(t, resp, env, http.StatusBadRequest, CodeInvalid, c.want)
	}
}
