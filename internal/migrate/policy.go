package migrate

import (
	"fmt"
	"strings"
	"time"
)

// Overwrite says what happens to an object that already exists at the destination.
type Overwrite string

// The overwrite policies; IfDifferent is the default.
const (
	OverwriteNever       Overwrite = "never"
	OverwriteAlways      Overwrite = "always"
	OverwriteIfDifferent Overwrite = "if-different"
)

// ParseOverwrite reads a policy; "" is the default, if-different.
func ParseOverwrite(s string) (Overwrite, error) {
	switch p := Overwrite(s); p {
	case "":
		return OverwriteIfDifferent, nil
	case OverwriteNever, OverwriteAlways, OverwriteIfDifferent:
		return p, nil
	}
	return "", fmt.Errorf("--overwrite %q: use never, always or if-different", s)
}

// Object is what a listing says of an object.
type Object struct {
	Key          string    `json:"key"`
	Size         int64     `json:"size"`
	ETag         string    `json:"etag,omitempty"`
	LastModified time.Time `json:"lastModified"`
}

// Why an object was or was not copied; recorded with every object.
const (
	ReasonAbsent            = "absent at the destination"
	ReasonAlways            = "exists; overwrite=always"
	ReasonNever             = "exists; overwrite=never"
	ReasonIdentical         = "identical: same size and ETag"
	ReasonIdenticalChecksum = "identical: same size and MD5 checksum"
	ReasonSizeDiffers       = "different size"
	ReasonETagDiffers       = "different ETag"
	ReasonChecksumDiffers   = "different MD5 checksum"
	// ReasonCopiedByJob: found during a retry, written after the job
	// started and identical, so the interrupted attempt had copied it.
	ReasonCopiedByJob = "copied by an interrupted attempt of this job"
)

// Decision is the verdict on one object.
type Decision struct {
	Copy bool
	// AlreadyCopied: an earlier attempt of this job wrote it; count it as
	// copied, do not write it again.
	AlreadyCopied bool
	// NeedChecksum: the sizes match but the ETags cannot be compared (one
	// or both are not MD5s); decide again with the MD5s of both sides.
	NeedChecksum bool
	Reason       string
}

// DecideInput is what Decide weighs.
type DecideInput struct {
	Policy Overwrite
	Source Object
	// Dest is nil when the destination has no object under the key.
	Dest *Object
	// SourceMD5 and DestMD5 are hex MD5s computed from the bytes, when a
	// first Decide asked for them.
	SourceMD5, DestMD5 string
	// Recovering is set when an earlier attempt of the same work may have
	// copied the object already (a retried or restarted page).
	Recovering bool
	// JobStarted is when the job started; with Recovering, an identical
	// object written since is taken as this job's own copy. Skew is how
	// far the store's clock may lag (zero: ClockSkew).
	JobStarted time.Time
	Skew       time.Duration
}

// ClockSkew is how far a store's clock may be behind Temporal's when
// Decide asks whether an object was written after the job started.
const ClockSkew = 5 * time.Minute

// Decide applies the overwrite policy to one object. It never asks for a
// checksum it does not need: absent objects and never/always decisions are
// settled by the listing alone.
func Decide(in DecideInput) Decision {
	if in.Dest == nil {
		return Decision{Copy: true, Reason: ReasonAbsent}
	}
	// An object written since the job started may be this job's own copy
	// from an interrupted attempt: then its bytes decide, whatever the policy.
	skew := in.Skew
	if skew == 0 {
		skew = ClockSkew
	}
	recent := in.Recovering && !in.Dest.LastModified.Before(in.JobStarted.Add(-skew))
	if in.Policy != OverwriteIfDifferent && !recent {
		if in.Policy == OverwriteNever {
			return Decision{Reason: ReasonNever}
		}
		return Decision{Copy: true, Reason: ReasonAlways}
	}
	same, reason := SameContent(in.Source, *in.Dest, in.SourceMD5, in.DestMD5)
	switch {
	case same == Unknown:
		return Decision{NeedChecksum: true}
	case same == Same && recent:
		return Decision{AlreadyCopied: true, Reason: ReasonCopiedByJob}
	case in.Policy == OverwriteNever:
		return Decision{Reason: ReasonNever}
	case in.Policy == OverwriteAlways:
		return Decision{Copy: true, Reason: ReasonAlways}
	case same == Same:
		return Decision{Reason: reason}
	default:
		return Decision{Copy: true, Reason: reason}
	}
}

// Comparison is what can be said of two objects' bytes.
type Comparison int

// The outcomes of SameContent.
const (
	Unknown Comparison = iota
	Same
	Different
)

// SameContent compares two objects by size, then ETag where both are MD5s
// (or are the same multipart ETag), then by the MD5s computed from their
// bytes when given. An MD5 ETag on one side is compared with the computed MD5
// of the other.
func SameContent(a, b Object, aMD5, bMD5 string) (Comparison, string) {
	if a.Size != b.Size {
		return Different, ReasonSizeDiffers
	}
	ea, eb := NormalizeETag(a.ETag), NormalizeETag(b.ETag)
	if ea != "" && ea == eb {
		return Same, ReasonIdentical
	}
	if IsMD5ETag(ea) && IsMD5ETag(eb) {
		return Different, ReasonETagDiffers
	}
	if aMD5 == "" && IsMD5ETag(ea) {
		aMD5 = ea
	}
	if bMD5 == "" && IsMD5ETag(eb) {
		bMD5 = eb
	}
	if aMD5 == "" || bMD5 == "" {
		return Unknown, ""
	}
	if strings.EqualFold(aMD5, bMD5) {
		return Same, ReasonIdenticalChecksum
	}
	return Different, ReasonChecksumDiffers
}

// NormalizeETag drops quotes and a weak marker and lower-cases it.
func NormalizeETag(e string) string {
	e = strings.TrimPrefix(strings.TrimSpace(e), "W/")
	return strings.ToLower(strings.Trim(e, `"`))
}

// IsMD5ETag reports whether an ETag has the form of an MD5 of the bytes (32
// hex digits). Multipart ETags ("…-N") are MD5s of part MD5s, not of the bytes.
func IsMD5ETag(e string) bool {
	e = NormalizeETag(e)
	if len(e) != 32 {
		return false
	}
	for _, c := range e {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// VerifyPlan says what verifying one copied object needs beyond its listing.
type VerifyPlan struct {
	SourceMD5, DestMD5 bool // compute the MD5 of that side's bytes
}

// PlanVerify decides how to verify a copy: sizes must match, then the ETags
// where both are MD5s; otherwise MD5s are computed, only on the sides whose
// ETag is not one. Two MD5-form ETags that differ are confirmed from the
// bytes before a mismatch is reported, since encrypted objects can carry
// ETags that look like MD5s but are not.
func PlanVerify(src, dst Object) (VerifyPlan, Comparison) {
	if src.Size != dst.Size {
		return VerifyPlan{}, Different
	}
	es, ed := NormalizeETag(src.ETag), NormalizeETag(dst.ETag)
	if es != "" && es == ed {
		return VerifyPlan{}, Same
	}
	if IsMD5ETag(es) && IsMD5ETag(ed) {
		return VerifyPlan{SourceMD5: true, DestMD5: true}, Unknown
	}
	return VerifyPlan{SourceMD5: !IsMD5ETag(es), DestMD5: !IsMD5ETag(ed)}, Unknown
}
