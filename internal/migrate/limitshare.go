package migrate

// SourceUsers is how many users of a job's source (pages copying, the
// listing) a share of its limits is divided by now: the most that may
// draw on the source before a user asks again. While the job may still
// start a user (its listing, or a redrive pass's, is not done) that is
// pagesInFlight, the most that ever run at once, because a page started
// meanwhile would draw its share before the others learned of it. Once
// nothing new can start, the users only end, so running (what is still
// in flight) is the most there will be, and each user may take the share
// of those that ended: the job runs at its limit to the last page, and
// never above it, however late a user learns.
func SourceUsers(pagesInFlight, running int, mayStartMore bool) int {
	most := max(pagesInFlight, 1)
	if mayStartMore {
		return most
	}
	return min(max(running, 1), most)
}

// WithShares is the limits divided among n users (at least one).
func (l Limits) WithShares(n int) Limits {
	l.Shares = max(n, 1)
	return l
}
