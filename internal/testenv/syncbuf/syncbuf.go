// Package syncbuf is a buffer that tests read while other goroutines write
// to it, in a package of its own so that any test can import it (testenv
// itself imports most of the project).
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects output written from other goroutines (a child
// process's output copier, a server's logger, background work that may log
// after a test has finished) while the test reads it. The zero value is
// ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes returns a copy of everything written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
