package console

import (
	"crypto/tls"
	"fmt"
	"net"
)

// TLSFromEnv is the console's own TLS, from CONSOLE_TLS_CERT and
// CONSOLE_TLS_KEY (PEM files: the certificate chain and its key); nil when
// neither is set (plain HTTP, for a loopback address or behind a proxy
// that ends TLS). The files are read once: a renewed certificate takes a
// restart.
func TLSFromEnv(getenv func(string) string) (*tls.Config, error) {
	cert, key := getenv("CONSOLE_TLS_CERT"), getenv("CONSOLE_TLS_KEY")
	switch {
	case cert == "" && key == "":
		return nil, nil
	case cert == "":
		return nil, fmt.Errorf("CONSOLE_TLS_CERT: not set, but CONSOLE_TLS_KEY is (set both to serve TLS, or neither)")
	case key == "":
		return nil, fmt.Errorf("CONSOLE_TLS_KEY: not set, but CONSOLE_TLS_CERT is (set both to serve TLS, or neither)")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("CONSOLE_TLS_CERT/CONSOLE_TLS_KEY: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// Listen listens on addr, over TLS if conf is set.
func Listen(addr string, conf *tls.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || conf == nil {
		return ln, err
	}
	return tls.NewListener(ln, conf), nil
}
