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
	rc   *http.ResponseController
	idle time.Duration
}

func newDeadlineWriter(w http.ResponseWriter, idle time.Duration) *deadlineWriter {
	return &deadlineWriter{w: w, rc: http.NewResponseController(w), idle: idle}
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		chunk := p
		if len(chunk) > deadlineChunk {
			chunk = chunk[:deadlineChunk]
		}
		// Writers that cannot take deadlines (tests' recorders) just write.
		_ = d.rc.SetWriteDeadline(time.Now().Add(d.idle))
		n, err := d.w.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
		p = p[len(chunk):]
	}
	return written, nil
}
