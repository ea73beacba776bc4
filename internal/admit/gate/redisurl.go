package gate

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis a gate counts on, by its URL's scheme (the same for the data
// center's and the Anywhere Redis):
//
//	redis://[user:password@]host:port[/db]    one server (rediss:// with TLS, unix:///path)
//	redis-sentinel://[user:password@]host:port[,host:port…]/MASTER[?db=N&sentinel_username=U&sentinel_password=P]
//	                                          the primary the Sentinels name, followed through failovers
//	redis-cluster://[user:password@]host:port[,host:port…]
//	                                          a Redis Cluster, from any of its nodes
//
// rediss-sentinel:// and rediss-cluster:// use TLS (to the Sentinels too).
// In a Sentinel URL the user and password are the Redis servers' (the
// gates' ACL user); the Sentinels' own, if they require one, go in
// sentinel_username and sentinel_password. A port left out is 26379 for a
// Sentinel and 6379 for a Cluster node.
const (
	SchemeSentinel    = "redis-sentinel"
	SchemeSentinelTLS = "rediss-sentinel"
	SchemeCluster     = "redis-cluster"
	SchemeClusterTLS  = "rediss-cluster"
)

// Redis client timeouts: a new visitor waits for the counter, so a slow or
// dead Redis must fail fast and let the gate fall back to the even split;
// no retries, for the same reason (a take retried after its answer was
// lost could be counted twice).
const (
	redisDialTimeout = 500 * time.Millisecond
	redisIOTimeout   = 250 * time.Millisecond
	redisPoolSize    = 64
	redisPoolTimeout = time.Second
	// clusterReloadEvery bounds how long a Cluster client keeps a slot map
	// that a failover changed: with no retries, nothing else reloads it
	// while a dead node's slots only fail.
	clusterReloadEvery = 2 * time.Second
)

func init() {
	// go-redis logs failed dials itself; the gate logs what it does about
	// them (Failover), once, instead of once per request.
	redis.SetLogger(quietRedisLog{})
}

type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

// RedisACL is the ACL rule of a Redis user that can do everything a gate
// does and nothing more: the keys under admit/ (and the session ledger's
// hash-tagged {admit/…}), reads, writes, scripts and transactions, the
// slot map and command table of a Cluster (its client routes by them),
// Redis's clock (TIME: the live view is stamped and aged on it), no
// administration.
// Give it to the gates' user, e.g.
//
//	ACL SETUSER gate on >PASSWORD <RedisACL>
//
// (on every server: a Sentinel's replicas and a Cluster's nodes too), and
// the gates redis://gate:PASSWORD@host:port/0 (rediss:// for TLS).
const RedisACL = "resetkeys ~admit/* ~{admit/* resetchannels -@all +@read +@write +@scripting +@transaction +ping +hello +auth +select +time +cluster|slots +command -@dangerous -script|flush -script|kill -script|debug -function"

// NewRedisClient connects to a Redis URL (see SchemeSentinel for the
// forms) with the gate's timeouts. Errors never show the password.
func NewRedisClient(rawURL string) (redis.UniversalClient, error) {
	t, err := parseRedisURL(rawURL)
	if err != nil {
		return nil, err
	}
	return t.client(), nil
}

// CheckRedisURL reports what is wrong with a Redis URL, without the
// password, or nil.
func CheckRedisURL(rawURL string) error {
	_, err := parseRedisURL(rawURL)
	return err
}

// redisTarget is a parsed Redis URL: exactly one of its options is set.
type redisTarget struct {
	single   *redis.Options
	failover *redis.FailoverOptions
	cluster  *redis.ClusterOptions
}

func parseRedisURL(rawURL string) (redisTarget, error) {
	scheme, _, _ := strings.Cut(rawURL, "://")
	switch strings.ToLower(scheme) {
	case SchemeSentinel, SchemeSentinelTLS:
		o, err := parseSentinelURL(rawURL)
		if err != nil {
			return redisTarget{}, fmt.Errorf("redis URL: %w", err)
		}
		return redisTarget{failover: o}, nil
	case SchemeCluster, SchemeClusterTLS:
		o, err := parseClusterURL(rawURL)
		if err != nil {
			return redisTarget{}, fmt.Errorf("redis URL: %w", err)
		}
		return redisTarget{cluster: o}, nil
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return redisTarget{}, fmt.Errorf("redis URL: %s", redactURLError(err))
	}
	return redisTarget{single: opts}, nil
}

func (t redisTarget) client() redis.UniversalClient {
	switch {
	case t.failover != nil:
		o := t.failover
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = redisDialTimeout, redisIOTimeout, redisIOTimeout
		o.PoolSize, o.PoolTimeout = redisPoolSize, redisPoolTimeout
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1
		o.DisableIdentity = true
		return redis.NewFailoverClient(o)
	case t.cluster != nil:
		o := t.cluster
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = redisDialTimeout, redisIOTimeout, redisIOTimeout
		o.PoolSize, o.PoolTimeout = redisPoolSize, redisPoolTimeout // per node
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1
		// Not even a redirect: go-redis resends a command on a timeout or
		// a dropped connection within the same budget, and a take sent
		// twice may count twice. A MOVED answer fails the take (it did not
		// run) and reloads the slot map for the next one.
		o.MaxRedirects = -1
		o.ClusterStateReloadInterval = clusterReloadEvery
		o.DisableIdentity = true
		return redis.NewClusterClient(o)
	}
	opts := t.single
	opts.DialTimeout = redisDialTimeout
	opts.ReadTimeout = redisIOTimeout
	opts.WriteTimeout = redisIOTimeout
	// A gate under a burst of visitors waits a little for a connection
	// rather than calling a busy store down (see ErrCountersBusy).
	opts.PoolSize = max(opts.PoolSize, redisPoolSize)
	opts.PoolTimeout = redisPoolTimeout
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1 // none: fall back instead
	opts.DisableIdentity = true
	return redis.NewClient(opts)
}

// multiHostURL splits a URL whose authority lists several host:port
// (which net/url does not parse) into those addresses, each with
// defaultPort if it has none, and the rest, parsed with one placeholder
// host.
func multiHostURL(rawURL, defaultPort string) (addrs []string, u *url.URL, err error) {
	scheme, rest, _ := strings.Cut(rawURL, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	userinfo, hosts := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	for i, h := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil { // no port
			host, port = h, defaultPort
			if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
				host = h[1 : len(h)-1]
			} else if strings.Contains(h, ":") {
				host = ""
			}
		}
		// The host is not echoed: a password with an unescaped '/' or '@'
		// would land here.
		if n, err := strconv.Atoi(port); host == "" || err != nil || n <= 0 || n > 65535 {
			return nil, nil, fmt.Errorf("%s URL: host %d: want host:port, hosts separated by commas", scheme, i+1)
		}
		addrs = append(addrs, net.JoinHostPort(host, port))
	}
	u, err = url.Parse(scheme + "://" + userinfo + "placeholder" + rest[end:])
	if err != nil {
		return nil, nil, errors.New(redactURLError(err))
	}
	if u.Fragment != "" {
		return nil, nil, fmt.Errorf("%s URL: a fragment (#…) means nothing here", scheme)
	}
	return addrs, u, nil
}

// parseSentinelURL reads
// redis-sentinel://[user:password@]host:port[,host:port…]/MASTER[?db=N&sentinel_username=U&sentinel_password=P].
func parseSentinelURL(rawURL string) (*redis.FailoverOptions, error) {
	addrs, u, err := multiHostURL(rawURL, "26379")
	if err != nil {
		return nil, err
	}
	o := &redis.FailoverOptions{SentinelAddrs: addrs}
	o.MasterName = strings.Trim(u.Path, "/")
	if o.MasterName == "" || strings.Contains(o.MasterName, "/") {
		return nil, fmt.Errorf("%s URL: want the primary's name as the Sentinels know it for its path: %s://host:26379,host:26379/MASTER", u.Scheme, u.Scheme)
	}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
	}
	q := u.Query()
	for name := range q {
		if !slices.Contains([]string{"db", "sentinel_username", "sentinel_password"}, name) {
			return nil, fmt.Errorf("%s URL: unknown parameter %q (known: db, sentinel_username, sentinel_password)", u.Scheme, name)
		}
	}
	if db := q.Get("db"); db != "" {
		if o.DB, err = strconv.Atoi(db); err != nil || o.DB < 0 {
			return nil, fmt.Errorf("%s URL: db %q: want a database number", u.Scheme, db)
		}
	}
	o.SentinelUsername, o.SentinelPassword = q.Get("sentinel_username"), q.Get("sentinel_password")
	if strings.EqualFold(u.Scheme, SchemeSentinelTLS) {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12} // the server name is each address's host
	}
	return o, nil
}

// parseClusterURL reads redis-cluster://[user:password@]host:port[,host:port…].
func parseClusterURL(rawURL string) (*redis.ClusterOptions, error) {
	addrs, u, err := multiHostURL(rawURL, "6379")
	if err != nil {
		return nil, err
	}
	if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
		return nil, fmt.Errorf("%s URL: path %q: a Cluster has only database 0", u.Scheme, u.Path)
	}
	if len(u.Query()) > 0 {
		return nil, fmt.Errorf("%s URL: takes no parameters", u.Scheme)
	}
	o := &redis.ClusterOptions{Addrs: addrs}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
	}
	if strings.EqualFold(u.Scheme, SchemeClusterTLS) {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return o, nil
}

// redactURLError keeps the reason a URL did not parse but never the URL
// itself (it may hold a password).
func redactURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return "malformed URL: " + ue.Err.Error()
	}
	return err.Error()
}

// RedisURLHosts describes where a Redis URL points, for logs: its hosts
// (and a Sentinel URL's primary name), never its user or password.
func RedisURLHosts(rawURL string) string {
	t, err := parseRedisURL(rawURL)
	switch {
	case err != nil:
		return "?"
	case t.failover != nil:
		return "sentinel " + strings.Join(t.failover.SentinelAddrs, ",") + " primary " + t.failover.MasterName
	case t.cluster != nil:
		return "cluster " + strings.Join(t.cluster.Addrs, ",")
	}
	return t.single.Addr
}
