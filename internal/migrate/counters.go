package migrate

// Counters are a job's (or a page's) running totals. Every object listed
// ends as exactly one of copied, skipped or failed; a dry run counts the
// objects it would copy as copied and writes nothing.
type Counters struct {
	Listed      int64 `json:"listed"`
	ListedBytes int64 `json:"listedBytes"`
	Copied      int64 `json:"copied"`
	Skipped     int64 `json:"skipped"`
	Failed      int64 `json:"failed"`
	// Bytes are the bytes copied (or, in a dry run, that would be).
	Bytes int64 `json:"bytes"`
	// Verified and Mismatched count the copies --verify compared.
	Verified   int64 `json:"verified,omitempty"`
	Mismatched int64 `json:"mismatched,omitempty"`
	// Throttled counts the store's SlowDown/503 answers the job waited out.
	Throttled int64 `json:"throttled,omitempty"`
	// Retried counts object attempts repeated after a transient error.
	Retried int64 `json:"retried,omitempty"`
	// Changed are the copies (of Copied) of objects the destination held
	// with other contents; Unchanged the skips (of Skipped) of objects it
	// held identical. Extraneous are the objects a sync found at the
	// destination that the source does not have, Deleted those of them it
	// deleted; neither is a listed object.
	Changed    int64 `json:"changed,omitempty"`
	Unchanged  int64 `json:"unchanged,omitempty"`
	Extraneous int64 `json:"extraneous,omitempty"`
	Deleted    int64 `json:"deleted,omitempty"`
	// Filtered are the keys the job's filters left out of its listing
	// (--include, --exclude, sizes, times): not listed objects either.
	Filtered int64 `json:"filtered,omitempty"`
}

// Add adds o to c.
func (c *Counters) Add(o Counters) {
	c.Listed += o.Listed
	c.ListedBytes += o.ListedBytes
	c.Copied += o.Copied
	c.Skipped += o.Skipped
	c.Failed += o.Failed
	c.Bytes += o.Bytes
	c.Verified += o.Verified
	c.Mismatched += o.Mismatched
	c.Throttled += o.Throttled
	c.Retried += o.Retried
	c.Changed += o.Changed
	c.Unchanged += o.Unchanged
	c.Extraneous += o.Extraneous
	c.Deleted += o.Deleted
	c.Filtered += o.Filtered
}

// Done is the number of listed objects that reached an outcome.
func (c Counters) Done() int64 { return c.Copied + c.Skipped + c.Failed }

// Count records one object's result, except listing, which the listing counts.
func (c *Counters) Count(r ObjectResult) {
	switch r.Status {
	case StatusCopied, StatusWouldCopy:
		c.Copied++
		c.Bytes += r.Bytes
		if isChange(r.Reason) {
			c.Changed++
		}
	case StatusSkipped:
		c.Skipped++
		if isUnchanged(r.Reason) {
			c.Unchanged++
		}
	case StatusFailed:
		c.Failed++
	case StatusExtraneous:
		c.Extraneous++
	case StatusDeleted:
		c.Extraneous++
		c.Deleted++
	}
	switch r.Verify {
	case VerifyMatch:
		c.Verified++
	case VerifyMismatch:
		c.Verified++
		c.Mismatched++
	}
	c.Throttled += int64(r.Throttled)
	if r.Attempts > 1 {
		c.Retried += int64(r.Attempts - 1)
	}
}
