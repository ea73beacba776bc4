package jobclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// The operator's allowlists for jobs started over the console's API (and
// its form). The migrate starter, run with an operator's own credentials,
// has none.
const (
	// EnvAllowedEndpoints lists the S3 endpoints such jobs may reach (see
	// ParseEndpointPolicy for the patterns).
	EnvAllowedEndpoints = "MIGRATE_ALLOWED_ENDPOINTS"
	// EnvGCSADCBuckets lists the gs:// buckets such jobs may read with the
	// workers' own Google identity (application default credentials); any
	// other gs:// source needs a sealed service-account key.
	EnvGCSADCBuckets = "MIGRATE_GCS_ADC_BUCKETS"
)

// EndpointPolicy says which endpoints a job started over the API may
// reach, and pins each to the addresses it resolved to when checked.
type EndpointPolicy struct {
	hosts []hostPattern
	nets  []netip.Prefix
	// gcsBuckets may be read with the workers' own Google identity.
	gcsBuckets []string
	// Lookup resolves a host name; nil: the system resolver.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// hostPattern is one allowed host: labels ("*" matches exactly one label
// of a name, never of an IP address) or an IP address, and a port ("":
// any).
type hostPattern struct {
	labels []string
	ip     netip.Addr
	port   string
}

func (p hostPattern) wildcard() bool { return slices.Contains(p.labels, "*") }

// ParseEndpointPolicy reads MIGRATE_ALLOWED_ENDPOINTS (allowed) and
// MIGRATE_GCS_ADC_BUCKETS (gcsBuckets), comma-separated. configured are
// the stores the operator configured (the console's own S3 endpoint),
// always allowed as exact host:port entries.
//
// An allowed endpoint is one of:
//
//	minio.internal:9000        this host name on this port
//	minio.internal             this host name on any port
//	*.r2.cloudflarestorage.com "*" is exactly one label: acct.r2.cloudflarestorage.com
//	s3.*.amazonaws.com         s3.eu-west-1.amazonaws.com, not s3.amazonaws.com
//	10.0.0.5:9000, [fd00::5]   an IP address (on a port)
//	10.20.0.0/16               endpoints given as addresses in the range, and
//	                           names that resolve into it
//
// Names are compared in lower case, without a trailing dot. A name
// matched by an entry without "*" may resolve to any address (the
// operator named it); a name matched only through "*" must resolve to
// public addresses (or into an allowed range): never loopback, link-local,
// private, shared (100.64.0.0/10), unspecified or multicast. A single-label
// name (an in-cluster service such as redis or temporal-frontend) is
// allowed only when named exactly.
func ParseEndpointPolicy(allowed, gcsBuckets string, configured ...string) (*EndpointPolicy, error) {
	p := &EndpointPolicy{}
	for _, e := range splitList(allowed) {
		if strings.Contains(e, "/") {
			prefix, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not an address range (10.0.0.0/8): %v", EnvAllowedEndpoints, e, err)
			}
			p.nets = append(p.nets, prefix.Masked())
			continue
		}
		hp, err := parseHostPattern(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %v", EnvAllowedEndpoints, e, err)
		}
		p.hosts = append(p.hosts, hp)
	}
	for _, e := range configured {
		if e == "" {
			continue
		}
		hp, err := parseHostPattern(e)
		if err != nil || hp.wildcard() {
			return nil, fmt.Errorf("configured store %q is not host:port", e)
		}
		p.hosts = append(p.hosts, hp)
	}
	for _, b := range splitList(gcsBuckets) {
		if err := migrate.CheckGCSBucketName(b); err != nil {
			return nil, fmt.Errorf("%s: %v", EnvGCSADCBuckets, err)
		}
		p.gcsBuckets = append(p.gcsBuckets, b)
	}
	return p, nil
}

func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

func parseHostPattern(e string) (hostPattern, error) {
	host, port := e, ""
	if h, p, err := net.SplitHostPort(e); err == nil {
		host, port = h, p
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return hostPattern{}, fmt.Errorf("port %q is not a number", port)
		}
	}
	host = s3.NormalizeHost(host)
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return hostPattern{}, errors.New("an address with a zone")
		}
		return hostPattern{ip: ip.Unmap(), port: port}, nil
	}
	if host == "" {
		return hostPattern{}, errors.New("no host")
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "*" {
			continue
		}
		if l == "" || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return hostPattern{}, errors.New(`a host pattern is DNS labels (letters, digits, "-") or "*" for exactly one label`)
		}
	}
	if len(labels) == 1 && labels[0] == "*" {
		return hostPattern{}, errors.New(`"*" alone would allow every single-label (in-cluster) name; name the hosts`)
	}
	return hostPattern{labels: labels, port: port}, nil
}

// match reports whether the pattern allows host (normalized) on port.
func (p hostPattern) match(host string, ip netip.Addr, port string) bool {
	if p.port != "" && p.port != port {
		return false
	}
	if p.ip.IsValid() || ip.IsValid() {
		return p.ip.IsValid() && ip.IsValid() && p.ip == ip
	}
	labels := strings.Split(host, ".")
	if len(labels) != len(p.labels) {
		return false
	}
	for i, l := range p.labels {
		if l != "*" && l != labels[i] {
			return false
		}
	}
	return true
}

// NotAllowedError is an endpoint a job started over the API may not reach.
// Its message says no more than that (never what the name resolved to, so
// a caller cannot map the network); Detail is for the operator's log.
type NotAllowedError struct {
	Option, Endpoint string
	Detail           string
}

func (e *NotAllowedError) Error() string {
	return fmt.Sprintf("%s %q: endpoint not allowed (the operator allows endpoints in %s)", e.Option, e.Endpoint, EnvAllowedEndpoints)
}

// Pin checks one endpoint against the policy and returns the addresses
// its workers must dial: resolved once, here, every one of them checked.
// option names the endpoint's option in errors.
func (p *EndpointPolicy) Pin(ctx context.Context, option, endpoint string, secure bool) ([]string, error) {
	refuse := func(format string, args ...any) error {
		return &NotAllowedError{Option: option, Endpoint: endpoint, Detail: fmt.Sprintf(format, args...)}
	}
	host, port := s3.SplitEndpoint(endpoint, secure)
	literal, err := netip.ParseAddr(host)
	if err == nil {
		if literal.Zone() != "" {
			return nil, refuse("an address with a zone")
		}
		literal = literal.Unmap()
	}
	exact, wild := false, false
	for _, hp := range p.hosts {
		if hp.match(host, literal, port) {
			exact = exact || !hp.wildcard()
			wild = wild || hp.wildcard()
		}
	}
	if literal.IsValid() {
		if !exact && !p.inNets(literal) {
			return nil, refuse("address %s is not allowed", literal)
		}
		return []string{literal.String()}, nil
	}
	switch {
	case !exact && !wild:
		return nil, refuse("no allowed endpoint matches %s:%s", host, port)
	case !exact && !strings.Contains(host, "."):
		return nil, refuse("single-label name %s is allowed only when named exactly", host)
	}
	lookup := p.Lookup
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := lookup(ctx, host)
	if err != nil || len(addrs) == 0 {
		return nil, refuse("%s does not resolve: %v", host, err)
	}
	pins := make([]string, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		if !exact && Internal(a) && !p.inNets(a) {
			return nil, refuse("%s resolves to %s, an internal address", host, a)
		}
		if s := a.String(); !slices.Contains(pins, s) {
			pins = append(pins, s)
		}
	}
	return pins, nil
}

func (p *EndpointPolicy) inNets(a netip.Addr) bool {
	for _, n := range p.nets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// sharedNets are ranges a public name must not lead to besides those
// netip's predicates name: this network (0/8), carrier-grade NAT's shared
// space (often a cluster's), IPv4 broadcast, and NAT64's well-known
// prefix (which embeds any IPv4 address).
var sharedNets = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("64:ff9b::/96"),
}

// Internal reports whether a is an address a public endpoint must not
// resolve to: loopback, link-local (169.254.0.0/16, fe80::/10), private
// (RFC 1918, fc00::/7), unspecified, multicast, or sharedNets.
func Internal(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsPrivate() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() {
		return true
	}
	for _, n := range sharedNets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// PinInput checks a job's sides against the policy and pins each S3 side
// to its checked addresses; a gs:// source needs a sealed key (hasGCSKey)
// or a bucket on MIGRATE_GCS_ADC_BUCKETS. Every refusal is returned,
// naming its option with name; an endpoint's says only that it is not
// allowed (NotAllowedError).
func (p *EndpointPolicy) PinInput(ctx context.Context, in *contract.JobInput, hasGCSKey bool, name Namer) []error {
	var problems []error
	for _, s := range []struct {
		side string
		e    *contract.Endpoint
	}{{"source", &in.Source}, {"dest", &in.Dest}} {
		if s.e.Provider == migrate.ProviderGCS {
			if !hasGCSKey && !slices.Contains(p.gcsBuckets, s.e.Bucket) {
				problems = append(problems, fmt.Errorf("%s %s: a gs:// source started here needs its service-account key (credentials.%s), "+
					"unless the operator allows its bucket to be read with the workers' own identity (%s)",
					name(s.side), s.e.Location, migrate.EnvSourceGCSKey, EnvGCSADCBuckets))
			}
			continue
		}
		if s.e.Endpoint == "" {
			continue // already refused as missing
		}
		pins, err := p.Pin(ctx, name(s.side+"-endpoint"), s.e.Endpoint, s.e.Secure)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		s.e.Pinned = pins
	}
	return problems
}

// PolicyFromEnv is the policy of MIGRATE_ALLOWED_ENDPOINTS and
// MIGRATE_GCS_ADC_BUCKETS (read with getenv), with the configured stores.
func PolicyFromEnv(getenv func(string) string, configured ...string) (*EndpointPolicy, error) {
	return ParseEndpointPolicy(getenv(EnvAllowedEndpoints), getenv(EnvGCSADCBuckets), configured...)
}
