package edge

import (
	"net/http"
	"time"
)

// deadlineChunk is how much of a body must be accepted within WriteIdle.
const deadlineChunk = 64 << 10

// deadlineWriter writes a response body in chunks, moving the connection's
// write deadline before each: the client must accept every chunk within
// idle, or the connection (or HTTP/2 stream) is closed. The server's
// WriteTimeout covers everything else.
type deadlineWriter struct {
	w    http.ResponseWriter
	idle time.Duration
}

func newDeadlineWriter(w http.ResponseWriter, idle time.Duration) *deadlineWriter {
	return &deadlineWriter{w: w, idle: idle}
}

func (d *deadlineWriter) Write(p []byte) (int, error) { return writeBody(d.w, p, d.idle) }

// writeBody writes data in chunks of deadlineChunk, moving the
// connection's write deadline before each, without allocating: a
// cached body goes out in one Write when it fits a chunk.
func writeBody(w http.ResponseWriter, data []byte, idle time.Duration) (int, error) {
	written := 0
	for len(data) > 0 {
		chunk := data[:min(len(data), deadlineChunk)]
		// Writers that cannot take deadlines (tests' recorders) just write.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(idle))
		n, err := w.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
		data = data[len(chunk):]
	}
	return written, nil
}
