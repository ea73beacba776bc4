// Package e2echeck holds the checks the end-to-end suites share: the fault
// suites (integration/chaos, build tag chaos) and the cluster profile's
// (integration/cluster, build tag cluster) read published versions back
// from an edge, and seed and compare a migration's objects, the same way.
// It has no build tag, so `go vet ./...` checks it whatever the suites'.
package e2echeck
