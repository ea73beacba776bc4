package edge

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// net/http writes a response through a 4 KiB buffer: a body larger than
// what is left of it after the headers leaves in two writes, the full
// buffer (headers and the body's start) and then the rest, each a system
// call and, on loopback or a LAN, a wake-up of the client. nginx sends a
// static file's headers and body together (writev, or TCP_CORK around
// sendfile). The edge does the same for a body it holds in memory: its
// connections hold the buffer's flush, when told a larger body follows,
// and send it with the next write in one writev.

// CoalescingListener wraps ln's TCP connections so that a cached file's
// headers and body go out in one system call. The http.Server must have
// ConnContext set to edge.ConnContext for the handler to find them; other
// connections are returned as they are.
func CoalescingListener(ln net.Listener) net.Listener { return coalescingListener{ln} }

type coalescingListener struct{ net.Listener }

func (l coalescingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		return &coalescingConn{TCPConn: tc}, nil
	}
	return c, err
}

// ConnContext is the http.Server's ConnContext for CoalescingListener's
// connections: it puts the connection where the handler finds it.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*coalescingConn); ok {
		return context.WithValue(ctx, coalescingConnKey{}, cc)
	}
	return ctx
}

type coalescingConnKey struct{}

// coalescingConn is a TCP connection that can hold one write back and send
// it with the next. It holds a write only when another one is sure to
// follow in the same response (holdNextWrite), so what it holds never
// waits for the client; a response cut short by a failure loses it with
// the connection. Reads are left alone: net/http reads in the background
// while a handler runs, and a read must not send what is held ahead of the
// write it waits for.
type coalescingConn struct {
	*net.TCPConn
	mu sync.Mutex // held and holdBelow; taken across a write of what is held
	// holdBelow holds the next write back if it is shorter: then it
	// cannot be all of a body of that length, so another write follows.
	holdBelow int
	held      []byte // a write held back (a copy: the caller reuses its buffer)
	// bufs is what is held and the write it goes with, kept here so
	// that the writev allocates nothing.
	bufs net.Buffers
	// writes counts the writes made to the connection (tests).
	writes atomic.Int64
	// pending is what the fast path read of the connection before handing
	// it to net/http: its reads return it first.
	pending []byte
}

func (c *coalescingConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		return c.TCPConn.Read(p)
	}
	n := copy(p, c.pending)
	if c.pending = c.pending[n:]; len(c.pending) == 0 {
		c.pending = nil
	}
	return n, nil
}

// WriteTo keeps io.Copy from reading past pending (TCPConn has a WriteTo).
func (c *coalescingConn) WriteTo(w io.Writer) (int64, error) {
	var n int64
	if len(c.pending) > 0 {
		m, err := w.Write(c.pending)
		n, c.pending = int64(m), nil
		if err != nil {
			return n, err
		}
	}
	m, err := c.TCPConn.WriteTo(w)
	return n + m, err
}

// writeTwo sends a and b in one writev, allocating nothing.
func (c *coalescingConn) writeTwo(a, b []byte) error {
	if len(b) == 0 {
		_, err := c.Write(a)
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes.Add(1)
	c.bufs = append(c.bufs[:0], a, b)
	all := c.bufs // WriteTo consumes c.bufs, and all keeps its array
	_, err := c.bufs.WriteTo(c.TCPConn)
	clear(all[:cap(all)])
	c.bufs = all[:0]
	return err
}

// holdNextWrite makes the connection hold its next write back until the
// one after it if it is shorter than n bytes, the body about to be written.
func (c *coalescingConn) holdNextWrite(n int) {
	c.mu.Lock()
	c.holdBelow = n
	c.mu.Unlock()
}

// maxHeld bounds what is held: net/http's buffer, with a margin.
const maxHeld = 16 << 10

func (c *coalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(p) < c.holdBelow && len(c.held) == 0 && len(p) <= maxHeld {
		c.holdBelow = 0
		c.held = append(c.held[:0], p...)
		return len(p), nil
	}
	c.holdBelow = 0
	c.writes.Add(1)
	if len(c.held) == 0 {
		return c.TCPConn.Write(p)
	}
	held := len(c.held)
	c.bufs = append(c.bufs[:0], c.held, p)
	all := c.bufs // WriteTo consumes c.bufs, and all keeps its array
	n, err := c.bufs.WriteTo(c.TCPConn)
	clear(all[:cap(all)]) // not to keep the caller's buffer
	c.bufs = all[:0]
	c.held = c.held[:0]
	// What was held was reported written already.
	return int(max(n-int64(held), 0)), err
}

// flushHeld sends what is held, if anything.
func (c *coalescingConn) flushHeld() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holdBelow = 0
	if len(c.held) == 0 {
		return nil
	}
	c.writes.Add(1)
	_, err := c.TCPConn.Write(c.held)
	c.held = c.held[:0]
	return err
}

func (c *coalescingConn) ReadFrom(r io.Reader) (int64, error) {
	if err := c.flushHeld(); err != nil {
		return 0, err
	}
	return c.TCPConn.ReadFrom(r)
}

func (c *coalescingConn) CloseWrite() error {
	_ = c.flushHeld()
	return c.TCPConn.CloseWrite()
}

// coalesceHeaders tells r's connection, if it is a coalescingConn, that a
// body of n bytes is about to be written in one Write: if net/http's
// buffer cannot take it whole, the buffer's flush (the headers and the
// body's start) is held back and sent with the rest. HTTP/1 only: HTTP/2
// writes frames of many streams from a goroutine of its own.
func coalesceHeaders(r *http.Request, n int) {
	if n <= 2<<10 || r.ProtoMajor != 1 {
		return
	}
	if c, ok := r.Context().Value(coalescingConnKey{}).(*coalescingConn); ok {
		c.holdNextWrite(n)
	}
}
