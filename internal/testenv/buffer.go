package testenv

import "github.com/edgeflow/edgeflow/internal/testenv/syncbuf"

// SyncBuffer collects output written from other goroutines while the test
// reads it (see syncbuf.Buffer).
type SyncBuffer = syncbuf.Buffer
