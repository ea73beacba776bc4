// Command plainproxy is BenchmarkGateOutOfProcess's baselines: a plain
// httputil.ReverseProxy (what the gate is compared with), or with -page a
// static origin serving one file on every path (when nginx is missing).
// It listens on a port of its own choosing and prints "listening ADDR".
//
//	plainproxy -origin http://127.0.0.1:3000
//	plainproxy -page page.html
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

func main() {
	origin := flag.String("origin", "", "the origin to proxy to")
	page := flag.String("page", "", "serve this file on every path instead")
	flag.Parse()
	var h http.Handler
	switch {
	case *page != "":
		body, err := os.ReadFile(*page)
		if err != nil {
			fail(err)
		}
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write(body)
		})
	case *origin != "":
		u, err := url.Parse(*origin)
		if err != nil || u.Host == "" {
			fail(fmt.Errorf("-origin %q: want an http:// URL", *origin))
		}
		rp := httputil.NewSingleHostReverseProxy(u)
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 256
		rp.Transport = t
		h = rp
	default:
		fail(fmt.Errorf("-origin or -page is required"))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fail(srv.Serve(ln))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "plainproxy:", err)
	os.Exit(1)
}
