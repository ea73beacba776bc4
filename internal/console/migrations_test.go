package console

import (
	"strings"
	"testing"
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
