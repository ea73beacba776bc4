package gate

import (
	"cmp"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// route is one host and path a room covers.
type route struct {
	host, path string // host "" matches every host
	fold       bool   // the room's path_case_insensitive: path is lower case, compared with the request's lowered
	room       *Room
}

// routeTable finds the room of a request. It is immutable: the registry
// builds a new one whenever a room's routes change and swaps it in.
type routeTable struct {
	byHost  map[string][]route // rooms with a host, longest path first
	anyHost []route            // rooms without one, longest path first
	fold    bool               // some route ignores case
}

// buildRoutes indexes the routes of live rooms. Two rooms claiming the same
// host and path are a conflict the settings cannot see (they are per room):
// the room whose name sorts first wins, the same on every gate.
func buildRoutes(rooms []*Room) *routeTable {
	t := &routeTable{byHost: map[string][]route{}}
	seen := map[admit.Route]bool{}
	slices.SortFunc(rooms, func(a, b *Room) int { return strings.Compare(a.name, b.name) })
	for _, r := range rooms {
		st := r.state.Load()
		if st == nil || !st.routed {
			continue
		}
		for _, rt := range st.snap.Settings.Routes() {
			fold := st.snap.Settings.PathCaseInsensitive
			key := admit.Route{Host: strings.ToLower(rt.Host), Path: rt.Path}
			if fold {
				key.Path = strings.ToLower(key.Path)
				t.fold = true
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			e := route{host: key.Host, path: key.Path, fold: fold, room: r}
			if key.Host == "" {
				t.anyHost = append(t.anyHost, e)
			} else {
				t.byHost[key.Host] = append(t.byHost[key.Host], e)
			}
		}
	}
	longestFirst := func(a, b route) int { return cmp.Compare(len(b.path), len(a.path)) }
	slices.SortStableFunc(t.anyHost, longestFirst)
	for h := range t.byHost {
		slices.SortStableFunc(t.byHost[h], longestFirst)
	}
	return t
}

// match finds the room covering host and the decoded path: the longest
// matching path wins; at equal length a room naming the host beats one
// without a host. The path is compared without its segments' ";"
// parameters and cleaned, so /public/../shop/ and /shop;v=1/cart are judged
// under /shop/ (the gate forwards the canonical path, see
// admit.CanonicalPath, so this only matters to callers that do not).
func (t *routeTable) match(host, p string) *Room {
	if t == nil {
		return nil
	}
	p = cleanPath(admit.SegmentParamsRemoved(p))
	lower := p
	if t.fold {
		lower = strings.ToLower(p)
	}
	of := func(r route) string {
		if r.fold {
			return lower
		}
		return p
	}
	best, bestLen := (*Room)(nil), -1
	for _, r := range t.byHost[normalizeHost(host)] {
		if pathCovers(r.path, of(r)) {
			best, bestLen = r.room, len(r.path)
			break
		}
	}
	for _, r := range t.anyHost {
		if len(r.path) <= bestLen {
			break
		}
		if pathCovers(r.path, of(r)) {
			return r.room
		}
	}
	return best
}

// pathCovers reports whether a room path covers a request path: the same
// path, or one below it. "/shop/" covers "/shop/" and "/shop/cart"; "/shop"
// covers "/shop" and "/shop/cart" but not "/shopping".
func pathCovers(roomPath, p string) bool {
	if !strings.HasPrefix(p, roomPath) {
		return false
	}
	return len(p) == len(roomPath) || strings.HasSuffix(roomPath, "/") || p[len(roomPath)] == '/'
}

// cleanPath resolves dot segments and doubled slashes, keeping a trailing
// slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if !strings.Contains(p, "//") && !strings.Contains(p, "/.") {
		return p // the common case, without allocating
	}
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// normalizeHost lowercases the request's host and drops its port (and an
// IPv6 address's brackets).
func normalizeHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	} else if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
	}
	h = strings.TrimSuffix(h, ".")
	for i := 0; i < len(h); i++ {
		if c := h[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(h)
		}
	}
	return h
}

// AnyHost is the --hosts value saying every Host is meant.
const AnyHost = "*"

// ParseHosts reads a comma-separated list of the host names a gate serves
// (Config.Hosts): names or IP addresses, without scheme, port or path;
// AnyHost alone (nil, every host) or none (an error: a gate must be told).
func ParseHosts(list string) ([]string, error) {
	if strings.TrimSpace(list) == AnyHost {
		return nil, nil
	}
	var out []string
	for h := range strings.SplitSeq(list, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, "/ \t*") {
			return nil, fmt.Errorf("%q is not a host name (no scheme, path or wildcard; %q alone for every host)", h, AnyHost)
		}
		if _, _, err := net.SplitHostPort(h); err == nil {
			return nil, fmt.Errorf("%q: no port (every port of a host is the same host)", h)
		}
		n := normalizeHost(h)
		if n == "" || strings.ContainsAny(n, "[]") {
			return nil, fmt.Errorf("%q is not a host name", h)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no host names: give the host names this gate serves (comma-separated), or %q for every host", AnyHost)
	}
	return out, nil
}
