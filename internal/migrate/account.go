package migrate

import "slices"

// DefaultJobLimit is how many jobs of one account run at once.
const DefaultJobLimit = 3

// JobQueue admits an account's jobs: at most Limit run at once, the others
// wait in line, first come first served. It is the state of the account's
// workflow, so the line survives restarts.
type JobQueue struct {
	Limit   int      `json:"limit"`
	Running []string `json:"running,omitempty"`
	Waiting []string `json:"waiting,omitempty"`
}

func (q *JobQueue) limit() int {
	if q.Limit < 1 {
		return DefaultJobLimit
	}
	return q.Limit
}

// Request asks a slot for job. It returns true when job may run now (also
// when it already holds a slot); otherwise job waits in line (once).
func (q *JobQueue) Request(job string) bool {
	if slices.Contains(q.Running, job) {
		return true
	}
	if slices.Contains(q.Waiting, job) {
		return false
	}
	if len(q.Running) < q.limit() && len(q.Waiting) == 0 {
		q.Running = append(q.Running, job)
		return true
	}
	q.Waiting = append(q.Waiting, job)
	return false
}

// Release gives job's slot (or place in line) back and returns the jobs
// that may run now.
func (q *JobQueue) Release(job string) []string {
	q.Running = slices.DeleteFunc(q.Running, func(j string) bool { return j == job })
	q.Waiting = slices.DeleteFunc(q.Waiting, func(j string) bool { return j == job })
	return q.promote()
}

// SetLimit changes the limit and returns the jobs that may run now.
func (q *JobQueue) SetLimit(n int) []string {
	q.Limit = n
	return q.promote()
}

func (q *JobQueue) promote() []string {
	var granted []string
	for len(q.Running) < q.limit() && len(q.Waiting) > 0 {
		job := q.Waiting[0]
		q.Waiting = q.Waiting[1:]
		q.Running = append(q.Running, job)
		granted = append(granted, job)
	}
	if len(q.Waiting) == 0 {
		q.Waiting = nil
	}
	return granted
}

// Position is job's place in line (1 is next), 0 when it runs, -1 when unknown.
func (q *JobQueue) Position(job string) int {
	if slices.Contains(q.Running, job) {
		return 0
	}
	if i := slices.Index(q.Waiting, job); i >= 0 {
		return i + 1
	}
	return -1
}
