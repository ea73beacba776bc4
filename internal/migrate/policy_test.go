package migrate

import (
	"testing"
	"time"
)

const (
	md5a = "0cc175b9c0f1b6a831c399e269772661"
	md5b = "92eb5ffee6ae2fec3ad71c777531578f"
)

func TestDecide(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	before, after := start.Add(-time.Hour), start.Add(time.Minute)
	src := Object{Key: "k", Size: 10, ETag: md5a}
	dst := func(size int64, etag string, mod time.Time) *Object {
		return &Object{Key: "k", Size: size, ETag: etag, LastModified: mod}
	}
	cases := []struct {
		name string
		in   DecideInput
		want Decision
	}{
		{"absent, never", DecideInput{Policy: OverwriteNever, Source: src}, Decision{Copy: true, Reason: ReasonAbsent}},
		{"absent, if-different", DecideInput{Policy: OverwriteIfDifferent, Source: src}, Decision{Copy: true, Reason: ReasonAbsent}},
		{"exists, never", DecideInput{Policy: OverwriteNever, Source: src, Dest: dst(99, md5b, before)}, Decision{Reason: ReasonNever}},
		{"exists, always", DecideInput{Policy: OverwriteAlways, Source: src, Dest: dst(10, md5a, before)}, Decision{Copy: true, Reason: ReasonAlways}},
		{"identical", DecideInput{Policy: OverwriteIfDifferent, Source: src, Dest: dst(10, `"`+md5a+`"`, before)}, Decision{Reason: ReasonIdentical}},
		{"other size", DecideInput{Policy: OverwriteIfDifferent, Source: src, Dest: dst(11, md5a, before)}, Decision{Copy: true, Reason: ReasonSizeDiffers}},
		{"other etag", DecideInput{Policy: OverwriteIfDifferent, Source: src, Dest: dst(10, md5b, before)}, Decision{Copy: true, Reason: ReasonETagDiffers}},
		{"multipart at dest: needs checksum", DecideInput{Policy: OverwriteIfDifferent, Source: src, Dest: dst(10, md5b+"-2", before)}, Decision{NeedChecksum: true}},
		{"multipart at dest, checksum equal", DecideInput{Policy: OverwriteIfDifferent, Source: src, Dest: dst(10, md5b+"-2", before), DestMD5: md5a},
			Decision{Reason: ReasonIdenticalChecksum}},
		{"multipart at dest, checksum differs", DecideInput{Policy: OverwriteIfDifferent, Source: src, Dest: dst(10, md5b+"-2", before), DestMD5: md5b},
			Decision{Copy: true, Reason: ReasonChecksumDiffers}},
		{"same multipart etag both sides", DecideInput{Policy: OverwriteIfDifferent, Source: Object{Size: 10, ETag: md5b + "-3"}, Dest: dst(10, md5b+"-3", before)},
			Decision{Reason: ReasonIdentical}},
		{"both multipart, both checksums", DecideInput{Policy: OverwriteIfDifferent, Source: Object{Size: 10, ETag: md5b + "-3"}, Dest: dst(10, md5b+"-2", before),
			SourceMD5: md5a, DestMD5: md5a}, Decision{Reason: ReasonIdenticalChecksum}},
		// Retried work: this job's own earlier copy counts as copied, whatever the policy.
		{"recovering, own copy, never", DecideInput{Policy: OverwriteNever, Source: src, Dest: dst(10, md5a, after), Recovering: true, JobStarted: start},
			Decision{AlreadyCopied: true, Reason: ReasonCopiedByJob}},
		{"recovering, own copy, always", DecideInput{Policy: OverwriteAlways, Source: src, Dest: dst(10, md5a, after), Recovering: true, JobStarted: start},
			Decision{AlreadyCopied: true, Reason: ReasonCopiedByJob}},
		{"recovering, own copy, if-different", DecideInput{Policy: OverwriteIfDifferent, Source: src, Dest: dst(10, md5a, after), Recovering: true, JobStarted: start},
			Decision{AlreadyCopied: true, Reason: ReasonCopiedByJob}},
		{"recovering, store clock a little behind", DecideInput{Policy: OverwriteAlways, Source: src, Dest: dst(10, md5a, start.Add(-time.Minute)), Recovering: true, JobStarted: start},
			Decision{AlreadyCopied: true, Reason: ReasonCopiedByJob}},
		{"recovering, older identical object, always", DecideInput{Policy: OverwriteAlways, Source: src, Dest: dst(10, md5a, before), Recovering: true, JobStarted: start},
			Decision{Copy: true, Reason: ReasonAlways}},
		{"recovering, recent but different, never", DecideInput{Policy: OverwriteNever, Source: src, Dest: dst(10, md5b, after), Recovering: true, JobStarted: start},
			Decision{Reason: ReasonNever}},
		{"recovering, recent but different, always", DecideInput{Policy: OverwriteAlways, Source: src, Dest: dst(10, md5b, after), Recovering: true, JobStarted: start},
			Decision{Copy: true, Reason: ReasonAlways}},
		{"recovering, recent multipart copy: checksum first", DecideInput{Policy: OverwriteAlways, Source: src, Dest: dst(10, md5b+"-2", after), Recovering: true, JobStarted: start},
			Decision{NeedChecksum: true}},
		{"not recovering, recent identical", DecideInput{Policy: OverwriteIfDifferent, Source: src, Dest: dst(10, md5a, after), JobStarted: start},
			Decision{Reason: ReasonIdentical}},
	}
	for _, c := range cases {
		if got := Decide(c.in); got != c.want {
			t.Errorf("%s: Decide = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestParseOverwrite(t *testing.T) {
	for in, want := range map[string]Overwrite{"": OverwriteIfDifferent, "never": OverwriteNever, "always": OverwriteAlways, "if-different": OverwriteIfDifferent} {
		if got, err := ParseOverwrite(in); err != nil || got != want {
			t.Errorf("ParseOverwrite(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseOverwrite("sometimes"); err == nil {
		t.Error("ParseOverwrite accepted sometimes")
	}
}

func TestIsMD5ETag(t *testing.T) {
	for e, want := range map[string]bool{
		md5a: true, `"` + md5a + `"`: true, "W/\"" + md5a + "\"": true, "0CC175B9C0F1B6A831C399E269772661": true,
		md5a + "-2": false, "": false, "xyz": false, md5a[:31] + "g": false,
	} {
		if IsMD5ETag(e) != want {
			t.Errorf("IsMD5ETag(%q) = %v", e, !want)
		}
	}
}

func TestPlanVerify(t *testing.T) {
	cases := []struct {
		name     string
		src, dst Object
		plan     VerifyPlan
		cmp      Comparison
	}{
		{"same md5", Object{Size: 1, ETag: md5a}, Object{Size: 1, ETag: md5a}, VerifyPlan{}, Same},
		{"sizes differ", Object{Size: 1, ETag: md5a}, Object{Size: 2, ETag: md5a}, VerifyPlan{}, Different},
		{"md5 to multipart: hash the destination", Object{Size: 1, ETag: md5a}, Object{Size: 1, ETag: md5b + "-2"}, VerifyPlan{DestMD5: true}, Unknown},
		{"multipart to md5: hash the source", Object{Size: 1, ETag: md5a + "-9"}, Object{Size: 1, ETag: md5b}, VerifyPlan{SourceMD5: true}, Unknown},
		{"both multipart, different layout", Object{Size: 1, ETag: md5a + "-9"}, Object{Size: 1, ETag: md5b + "-2"}, VerifyPlan{SourceMD5: true, DestMD5: true}, Unknown},
		{"md5s differ: confirm from the bytes", Object{Size: 1, ETag: md5a}, Object{Size: 1, ETag: md5b}, VerifyPlan{SourceMD5: true, DestMD5: true}, Unknown},
	}
	for _, c := range cases {
		plan, cmp := PlanVerify(c.src, c.dst)
		if plan != c.plan || cmp != c.cmp {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, plan, cmp, c.plan, c.cmp)
		}
	}
}
