package edge

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// net/http costs a hot file request about twice what the file itself
// costs (docs/benchmarks.md, "The edge out of process"): its request
// parsing, header maps, contexts, background reads and deadlines. The edge
// answers the plainest requests for files it holds in memory itself, on
// connections it owns (fastserve.go), and gives every other request,
// with the connection it came on, to the http.Server as it came.

// FastListener is the edge's listener for an http.Server: it accepts the
// TCP connections of ln, answers on them the GET and HEAD requests of
// files it can answer from its caches, and hands a connection to the
// http.Server (through Accept, the bytes read so far replayed) at the
// first request it does not answer; net/http then owns that connection.
// The connections it hands over coalesce a cached body with its headers
// (CoalescingListener). The http.Server must have ConnContext set to
// edge.ConnContext and must serve this Server as its Handler: with any
// other handler (a tracing wrapper, a middleware) every connection is
// handed over at once. Shutdown and Close of the http.Server close it:
// idle connections at once, the others after the answer under way; Drain
// waits for those.
type FastListener struct {
	ln     net.Listener
	s      *Server
	hs     *http.Server
	start  sync.Once
	accept chan acceptResult
	done   chan struct{}
	closed atomic.Bool
	close  sync.Once
	// timeouts, from hs when Accept is first called (net/http's rules)
	headerTimeout, idleTimeout time.Duration
	fast                       bool // hs.Handler is the edge itself

	mu    sync.Mutex
	conns map[*fastConn]struct{} // the connections the fast path owns
	wg    sync.WaitGroup         // one per connection in conns
	// answered counts the requests the fast path answered, panics those
	// that panicked (tests).
	answered, panics atomic.Int64
}

type acceptResult struct {
	conn net.Conn
	err  error
}

// FastListener wraps ln for hs.Serve (see the type).
func (s *Server) FastListener(ln net.Listener, hs *http.Server) *FastListener {
	return &FastListener{ln: ln, s: s, hs: hs, accept: make(chan acceptResult), done: make(chan struct{}), conns: map[*fastConn]struct{}{}}
}

// Accept returns the next connection the fast path hands over, or ln's
// error. The first call starts accepting on ln.
func (l *FastListener) Accept() (net.Conn, error) {
	l.start.Do(func() {
		hs := l.hs
		l.headerTimeout, l.idleTimeout = hs.ReadHeaderTimeout, hs.IdleTimeout
		if l.headerTimeout <= 0 {
			l.headerTimeout = hs.ReadTimeout
		}
		if l.idleTimeout <= 0 {
			l.idleTimeout = hs.ReadTimeout
		}
		l.fast = hs.Handler == http.Handler(l.s)
		go l.acceptLoop()
	})
	select {
	case r := <-l.accept:
		return r.conn, r.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *FastListener) acceptLoop() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			// net/http decides: it retries a temporary error, else stops
			// serving and closes the listener.
			select {
			case l.accept <- acceptResult{err: err}:
			case <-l.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			l.handOver(c)
			continue
		}
		cc := &coalescingConn{TCPConn: tc}
		if !l.fast || !l.track(cc) {
			l.handOver(cc)
		}
	}
}

// handOver gives c to the http.Server, or closes it if the listener is closed.
func (l *FastListener) handOver(c net.Conn) {
	select {
	case l.accept <- acceptResult{conn: c}:
	case <-l.done:
		_ = c.Close()
	}
}

// track starts serving cc on the fast path; false once the listener is closed.
func (l *FastListener) track(cc *coalescingConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return false
	}
	fc := newFastConn(l, cc)
	l.conns[fc] = struct{}{}
	l.wg.Add(1)
	go fc.serve()
	return true
}

// untrack ends the fast path's ownership of fc's connection.
func (l *FastListener) untrack(fc *fastConn) {
	l.mu.Lock()
	delete(l.conns, fc)
	l.mu.Unlock()
	l.wg.Done()
}

// Close stops accepting and closes the fast path's idle connections; the
// others close after the answer under way. The http.Server's Shutdown and
// Close call it.
func (l *FastListener) Close() error {
	var err error
	l.close.Do(func() {
		l.mu.Lock()
		l.closed.Store(true)
		close(l.done)
		for fc := range l.conns {
			if fc.idle.Load() {
				_ = fc.c.Close()
			}
		}
		l.mu.Unlock()
		err = l.ln.Close()
	})
	return err
}

// Addr is ln's.
func (l *FastListener) Addr() net.Addr { return l.ln.Addr() }

// Drain waits, after Close, for the fast path's connections to finish the
// answers under way, at most timeout; then it closes those left.
func (l *FastListener) Drain(timeout time.Duration) {
	drained := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(timeout):
		l.mu.Lock()
		for fc := range l.conns {
			_ = fc.c.Close()
		}
		l.mu.Unlock()
	}
}

// fastConns counts the connections the fast path owns (tests).
func (l *FastListener) fastConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
