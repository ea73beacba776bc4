package migrate

import (
	"strings"
	"testing"
)

func TestParseLocation(t *testing.T) {
	cases := []struct {
		in      string
		want    Location
		wantErr string
	}{
		{"s3://bucket", Location{Bucket: "bucket"}, ""},
		{"s3://bucket/", Location{Bucket: "bucket"}, ""},
		{"s3://bucket/copy/", Location{Bucket: "bucket", Prefix: "copy/"}, ""},
		{"s3://my.bucket-1/a b/ü/+%/", Location{Bucket: "my.bucket-1", Prefix: "a b/ü/+%/"}, ""},
		{"s3://bucket/img", Location{Bucket: "bucket", Prefix: "img"}, ""},
		{"bucket/x", Location{}, "s3://BUCKET[/PREFIX]"},
		{"http://bucket", Location{}, "s3://BUCKET[/PREFIX]"},
		{"s3://", Location{}, "empty"},
		{"s3://ab", Location{}, "3 to 63"},
		{"s3://" + strings.Repeat("a", 64), Location{}, "3 to 63"},
		{"s3://Bucket", Location{}, "lower-case"},
		{"s3://bu_cket", Location{}, "lower-case"},
		{"s3://-bucket", Location{}, "starts and ends"},
		{"s3://bucket-", Location{}, "starts and ends"},
		{"s3://a..b", Location{}, `".."`},
		{"s3://192.168.1.1", Location{}, "IP address"},
		{"s3://bucket/" + strings.Repeat("p", 1025), Location{}, "at most 1024"},
		{"s3://bucket/\xff", Location{}, "UTF-8"},
	}
	for _, c := range cases {
		got, err := ParseLocation(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ParseLocation(%.40q) = %v, %v; want error with %q", c.in, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseLocation(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if back, _ := ParseLocation(got.String()); back != got {
			t.Errorf("%q: String %q does not parse back", c.in, got.String())
		}
	}
}

func TestKeyMap(t *testing.T) {
	cases := []struct {
		m        KeyMap
		src, dst string
	}{
		{KeyMap{}, "a/b.js", "a/b.js"},
		{KeyMap{DestPrefix: "copy/"}, "a/b.js", "copy/a/b.js"},
		// Prepended as is: no slash is added.
		{KeyMap{DestPrefix: "copy"}, "a/b.js", "copya/b.js"},
		{KeyMap{SourcePrefix: "a/", DestPrefix: "copy/"}, "a/b.js", "copy/a/b.js"},
		{KeyMap{SourcePrefix: "ajax/libs/", StripSourcePrefix: true}, "ajax/libs/x/1.0/x.js", "x/1.0/x.js"},
		{KeyMap{SourcePrefix: "ajax/libs/", DestPrefix: "v1/", StripSourcePrefix: true}, "ajax/libs/x.js", "v1/x.js"},
		{KeyMap{DestPrefix: "d/"}, "sp ace/+plus/%25/ünï/deep/a/b/c/d/e/f", "d/sp ace/+plus/%25/ünï/deep/a/b/c/d/e/f"},
	}
	for _, c := range cases {
		if got := c.m.Dest(c.src); got != c.dst {
			t.Errorf("%+v.Dest(%q) = %q, want %q", c.m, c.src, got, c.dst)
		}
	}
}

func TestCheckKey(t *testing.T) {
	for k, want := range map[string]string{
		"":                        "empty",
		strings.Repeat("k", 1025): "at most 1024",
		"bad\xffkey":              "UTF-8",
		"ok key+%/ü":              "",
	} {
		err := CheckKey(k)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("CheckKey(%.20q) = %v, want %q", k, err, want)
		}
	}
}
