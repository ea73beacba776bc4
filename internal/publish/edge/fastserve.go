package edge

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// fastConn is a connection the fast path owns: it reads each request head
// whole into a pooled buffer and answers it, or hands the connection, with
// what it has read, to the http.Server.
type fastConn struct {
	l    *FastListener
	c    *coalescingConn
	br   *bufio.Reader
	idle atomic.Bool // waiting for the first byte of a request
	// readDeadline: a read deadline is set on c.
	readDeadline bool
	out          []byte // the answer's head, reused
	// The last values of these headers as strings: a client repeats them,
	// and the conversion would cost an allocation a request.
	acceptEncoding, ifNoneMatch, ifModifiedSince string
}

// fastReadBuffer bounds a request head the fast path reads: a longer one is
// handed over (net/http's limit is the server's MaxHeaderBytes).
const fastReadBuffer = 4 << 10

var fastReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, fastReadBuffer) }}

func newFastConn(l *FastListener, c *coalescingConn) *fastConn {
	br := fastReaders.Get().(*bufio.Reader)
	br.Reset(c)
	return &fastConn{l: l, c: c, br: br, out: make([]byte, 0, 1024)}
}

// next is what a connection does after a request head or an answer.
type next int

const (
	nextRequest next = iota
	nextHandOver
	nextClose
)

func (fc *fastConn) serve() {
	then := nextClose
	defer func() {
		if v := recover(); v != nil {
			fc.l.s.log.Error("fast path panicked; connection closed", "panic", v, "stack", string(debug.Stack()))
			fc.l.panics.Add(1)
			then = nextClose
		}
		if then == nextHandOver {
			if n := fc.br.Buffered(); n > 0 {
				b, _ := fc.br.Peek(n)
				fc.c.pending = bytes.Clone(b)
			}
			// net/http sets the deadlines it wants, but only those.
			_ = fc.c.SetDeadline(time.Time{})
		}
		fc.br.Reset(nil)
		fastReaders.Put(fc.br)
		fc.br = nil
		fc.l.untrack(fc)
		if then == nextHandOver {
			fc.l.handOver(fc.c)
		} else {
			_ = fc.c.Close()
		}
	}()
	// The first request's head must arrive within the header timeout, as
	// net/http's; later ones may wait for the idle timeout first.
	if d := fc.l.headerTimeout; d > 0 {
		_ = fc.c.SetReadDeadline(time.Now().Add(d))
		fc.readDeadline = true
	}
	for first := true; ; first = false {
		if !first && fc.br.Buffered() == 0 && !fc.waitIdle() {
			return
		}
		var head []byte
		if head, then = fc.readHead(first); then != nextRequest {
			return
		}
		req, ok := parseFastRequest(head)
		if !ok {
			then = nextHandOver
			return
		}
		closing := req.close || fc.l.closed.Load()
		answered, err := fc.answer(&req, closing)
		if !answered {
			then = nextHandOver
			return
		}
		if err != nil || closing {
			then = nextClose
			return
		}
		_, _ = fc.br.Discard(len(head))
	}
}

// waitIdle waits for the next request's first byte, at most the idle
// timeout; false when the connection is to close.
func (fc *fastConn) waitIdle() bool {
	fc.idle.Store(true)
	defer fc.idle.Store(false)
	if fc.l.closed.Load() {
		return false
	}
	fc.readWithin(fc.l.idleTimeout)
	_, err := fc.br.Peek(1)
	return err == nil
}

// readWithin sets the read deadline d from now; d <= 0 clears one set
// before.
func (fc *fastConn) readWithin(d time.Duration) {
	if d > 0 {
		_ = fc.c.SetReadDeadline(time.Now().Add(d))
		fc.readDeadline = true
	} else if fc.readDeadline {
		_ = fc.c.SetReadDeadline(time.Time{})
		fc.readDeadline = false
	}
}

// readHead returns the next request's head (through the empty line) once
// it is buffered whole. timed: the header timeout runs already.
func (fc *fastConn) readHead(timed bool) ([]byte, next) {
	scanned := 0 // the complete lines checked
	for {
		buf, _ := fc.br.Peek(fc.br.Buffered())
		for {
			i := bytes.IndexByte(buf[scanned:], '\n')
			if i < 0 {
				break
			}
			lf := scanned + i
			if lf < 2 || buf[lf-1] != '\r' {
				return nil, nextHandOver // a bare LF or an empty first line: net/http's
			}
			if lf-1 == scanned {
				return buf[:lf+1], nextRequest // the empty line ending the head
			}
			scanned = lf + 1
		}
		if len(buf) >= fc.br.Size() {
			return nil, nextHandOver // too long for the fast path
		}
		if !timed {
			timed = true
			fc.readWithin(fc.l.headerTimeout)
		}
		if _, err := fc.br.Peek(len(buf) + 1); err != nil {
			var ne net.Error
			if fc.br.Buffered() == 0 || errors.As(err, &ne) && ne.Timeout() {
				return nil, nextClose // as net/http: no answer to a timed-out head
			}
			// Cut short: net/http answers what it makes of it.
			return nil, nextHandOver
		}
	}
}

// answer answers req if it is a request for a file held in memory, as
// Server.ServeHTTP would; answered is false, and nothing is written, for
// any other. err is the write's.
func (fc *fastConn) answer(req *fastRequest, closing bool) (answered bool, err error) {
	s := fc.l.s
	p := string(req.path)
	if status, _ := checkPath(p, p); status != 0 {
		return false, nil
	}
	name, version, path, ok := splitFilePath(p[len(fileRoutePrefix):])
	if !ok || !validName(name) || !validVersionSpec(version) {
		return false, nil
	}
	pkg, found, ok := s.meta.CachedPackage(name)
	if !ok || !found || !pkg.hasVersion(version) {
		return false, nil
	}
	key := servedKey{name, version, path}
	sf, ok := s.served.Get(key)
	if !ok {
		if sf, ok = s.cachedServedFile(pkg, key); !ok {
			return false, nil
		}
	}
	enc := negotiateEncoding(reuseString(&fc.acceptEncoding, req.acceptEncoding), sf.file)
	heads := &sf.fastHeaders()[enc]
	rep := &sf.reps[enc]
	if notModifiedBy(reuseString(&fc.ifNoneMatch, req.ifNoneMatch), reuseString(&fc.ifModifiedSince, req.ifModifiedSince), rep.tag, sf.lastModified) {
		return true, fc.write(heads.notModified, nil, closing)
	}
	if req.head {
		return true, fc.write(heads.head, nil, closing)
	}
	if rep.size > s.cfg.MaxCachedFile {
		return false, nil
	}
	body, ok := s.files.Get(rep.key)
	if !ok || int64(len(body)) < rep.size {
		return false, nil
	}
	s.metrics.hits.Inc()
	s.metrics.body(sourceCache)
	return true, fc.write(heads.get, body[:rep.size], closing)
}

// cachedServedFile builds what serving the file under key needs from its
// version document if that is cached, as serveFile does.
func (s *Server) cachedServedFile(pkg *packageInfo, key servedKey) (*servedFile, bool) {
	ver, found, ok := s.meta.versions.peek(key.name + "@" + key.version)
	if !ok || !found {
		return nil, false
	}
	file, ok := ver.Lookup(key.path)
	if !ok {
		return nil, false
	}
	if _, err := file.CheckedKey(ver.Name, ver.Version); err != nil {
		return nil, false
	}
	sf := newServedFile(ver, file)
	s.served.Add(key, sf, sf.cost(key))
	return sf, true
}

// write sends an answer: head (status line and headers but Date), then
// Date, then the body, in one writev for up to a chunk of body; each
// further chunk must be taken within WriteIdle, as writeBody's.
func (fc *fastConn) write(head, body []byte, closing bool) error {
	fc.l.answered.Add(1) // before: a test reads it once it has the answer
	now := time.Now()
	out := append(fc.out[:0], head...)
	out = append(out, "Date: "...)
	out = appendDate(out, now)
	out = append(out, "\r\n"...)
	if closing {
		out = append(out, "Connection: close\r\n"...)
	}
	out = append(out, "\r\n"...)
	fc.out = out
	idle := fc.l.s.cfg.WriteIdle
	_ = fc.c.SetWriteDeadline(now.Add(idle))
	chunk := body[:min(len(body), deadlineChunk)]
	if err := fc.c.writeTwo(out, chunk); err != nil {
		return err
	}
	for body = body[len(chunk):]; len(body) > 0; body = body[len(chunk):] {
		chunk = body[:min(len(body), deadlineChunk)]
		_ = fc.c.SetWriteDeadline(time.Now().Add(idle))
		if _, err := fc.c.Write(chunk); err != nil {
			return err
		}
	}
	return nil
}

// reuseString is b as a string, *last when equal to it (no allocation).
func reuseString(last *string, b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if string(b) != *last {
		*last = string(b)
	}
	return *last
}

// fastHeaders are a served file's answers' heads per encoding, but their
// Date: built once with net/http's own header writer, so they are the
// bytes net/http sends for the same answers.
type fastHeaders [encodingCount]struct{ get, head, notModified []byte }

func (sf *servedFile) fastHeaders() *fastHeaders {
	if h := sf.fast.Load(); h != nil {
		return h
	}
	var heads fastHeaders
	for enc := range encoding(encodingCount) {
		h := http.Header{}
		setCommonHeaders(h)
		sf.setHeaders(h, enc)
		notModified := h.Clone() // as serveRepresentation's 304
		delete(notModified, "Content-Type")
		delete(notModified, "Content-Encoding")
		heads[enc].notModified = statusAndHeaders(http.StatusNotModified, notModified)
		h["Content-Length"] = sf.reps[enc].contentLength
		heads[enc].head = statusAndHeaders(http.StatusOK, h)
		h["X-Edge-Source"] = sourceHeaders[sourceCache]
		heads[enc].get = statusAndHeaders(http.StatusOK, h)
	}
	sf.fast.Store(&heads) // racing builders build the same
	return &heads
}

func statusAndHeaders(status int, h http.Header) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	_ = h.Write(&b)
	return b.Bytes()
}

// dateLine is a Date header's value for one second.
type dateLine struct {
	unix int64
	text []byte
}

var currentDate atomic.Pointer[dateLine]

// appendDate appends now as net/http's Date header has it.
func appendDate(b []byte, now time.Time) []byte {
	d := currentDate.Load()
	if d == nil || d.unix != now.Unix() {
		d = &dateLine{unix: now.Unix(), text: now.UTC().AppendFormat(nil, http.TimeFormat)}
		currentDate.Store(d)
	}
	return append(b, d.text...)
}
