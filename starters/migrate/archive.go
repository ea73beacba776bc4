package main

import (
	"errors"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
)

// A finished job's workflow is removed after the namespace's retention;
// its summary stays in the job store (the job wrote it as it ended), so
// status, report and list --all read it there once Temporal says NotFound
// (jobclient.Status, jobclient.List). The starter finds the job store as
// the worker does: the -s3-endpoint and -bucket-migrate flags, or
// S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY and BUCKET_MIGRATE.

// statusCode is the exit code of an error of jobclient.Status or List.
func statusCode(err error) int {
	var ae *jobclient.ArchiveError
	if errors.As(err, &ae) {
		return cli.ExitUnavailable
	}
	return temporalCode(err)
}
