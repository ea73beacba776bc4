// Package migrate is the logic of Migrate, the bucket-to-bucket copy: where
// objects go (locations and key mapping), whether an object is copied (the
// overwrite policy), how a job pages, counts, retries, throttles, verifies,
// reports, queues per account and splits, and how its credentials are sealed.
// It is plain Go, tested without Temporal; the activities in
// activities/migrate are thin adapters over it.
package migrate
