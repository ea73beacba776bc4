package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// PinnedDialer is a DialContext for endpoint (host[:port]; the port
// defaults to 443 or 80 by secure) that dials only the pinned IP
// addresses, in order until one answers, and refuses any other host or
// port (a redirect elsewhere, a virtual-hosted bucket name).
func PinnedDialer(endpoint string, secure bool, pinned []string) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	host, port := SplitEndpoint(endpoint, secure)
	addrs := make([]netip.Addr, 0, len(pinned))
	for _, p := range pinned {
		a, err := netip.ParseAddr(p)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("pinned address %q is not an IP address", p)
		}
		addrs = append(addrs, a.Unmap())
	}
	if len(addrs) == 0 {
		return nil, errors.New("no pinned address")
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h, p, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if NormalizeHost(h) != host || p != port {
			return nil, fmt.Errorf("dial %s: this store may reach only %s", addr, net.JoinHostPort(host, port))
		}
		var last error
		for _, a := range addrs {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), p))
			if err == nil {
				return c, nil
			}
			last = err
		}
		return nil, last
	}, nil
}

// SplitEndpoint is an endpoint's host (normalized: lower case, no
// brackets, no trailing dot) and port (443 or 80 by secure if none).
func SplitEndpoint(endpoint string, secure bool) (host, port string) {
	h, p, err := net.SplitHostPort(endpoint)
	if err != nil {
		h, p = endpoint, ""
	}
	if p == "" {
		p = "80"
		if secure {
			p = "443"
		}
	}
	return NormalizeHost(h), p
}

// NormalizeHost is a host as endpoints are compared: lower case, without
// IPv6 brackets or a trailing dot.
func NormalizeHost(h string) string {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}
