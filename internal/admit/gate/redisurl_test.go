package gate

import (
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestSentinelURL(t *testing.T) {
	for _, c := range []struct {
		url                    string
		addrs                  []string
		master                 string
		db                     int
		user, pass             string
		sentinelUser, sentPass string
		tls                    bool
	}{
		{url: "redis-sentinel://s1:26379,s2:26380,s3/anywhere", addrs: []string{"s1:26379", "s2:26380", "s3:26379"}, master: "anywhere"},
		{url: "redis-sentinel://gate:p%40ss@10.0.0.1,[::1]:26379/mymaster/?db=2&sentinel_password=sp&sentinel_username=su",
			addrs: []string{"10.0.0.1:26379", "[::1]:26379"}, master: "mymaster", db: 2, user: "gate", pass: "p@ss", sentinelUser: "su", sentPass: "sp"},
		{url: "rediss-sentinel://:pw@s1:26379/m", addrs: []string{"s1:26379"}, master: "m", pass: "pw", tls: true},
	} {
		tg, err := parseRedisURL(c.url)
		if err != nil || tg.failover == nil {
			t.Errorf("%s: %v, want Sentinel options", c.url, err)
			continue
		}
		o := tg.failover
		if !slices.Equal(o.SentinelAddrs, c.addrs) || o.MasterName != c.master || o.DB != c.db || o.Username != c.user || o.Password != c.pass ||
			o.SentinelUsername != c.sentinelUser || o.SentinelPassword != c.sentPass || (o.TLSConfig != nil) != c.tls {
			t.Errorf("%s: sentinels %v primary %q db %d user %q/%q sentinel user %q/%q tls %t", c.url, o.SentinelAddrs, o.MasterName, o.DB,
				o.Username, o.Password, o.SentinelUsername, o.SentinelPassword, o.TLSConfig != nil)
		}
		client := tg.client()
		if _, ok := client.(*redis.Client); !ok {
			t.Errorf("%s: a %T, want go-redis's failover client", c.url, client)
		}
		_ = client.Close()
	}
}

func TestClusterURL(t *testing.T) {
	tg, err := parseRedisURL("redis-cluster://gate:secret@n1:7000,n2,n3:7002/0")
	if err != nil || tg.cluster == nil {
		t.Fatalf("%v, want Cluster options", err)
	}
	o := tg.cluster
	if !slices.Equal(o.Addrs, []string{"n1:7000", "n2:6379", "n3:7002"}) || o.Username != "gate" || o.Password != "secret" || o.TLSConfig != nil {
		t.Errorf("nodes %v user %q/%q tls %t", o.Addrs, o.Username, o.Password, o.TLSConfig != nil)
	}
	client := tg.client()
	defer client.Close()
	cc, ok := client.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("a %T, want go-redis's cluster client", client)
	}
	// A take is sent once: neither a retry nor a redirect may send it again.
	if opt := cc.Options(); opt.MaxRedirects != 0 || opt.MaxRetries != -1 {
		t.Errorf("redirects %d, retries %d: a take could be sent twice", opt.MaxRedirects, opt.MaxRetries)
	}
	if tg, err := parseRedisURL("rediss-cluster://n1:7000"); err != nil || tg.cluster == nil || tg.cluster.TLSConfig == nil {
		t.Errorf("rediss-cluster: %v, want TLS", err)
	}
}

// A Redis URL that cannot be used says what is wrong with it, and never
// shows the password.
func TestRedisURLErrorsSayWhatAndHideThePassword(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"redis-sentinel://gate:s3cret@s1:26379", "the primary's name"},
		{"redis-sentinel://gate:s3cret@s1:26379/", "the primary's name"},
		{"redis-sentinel://gate:s3cret@s1:26379/m?sentinel_pasword=s3cret", `unknown parameter "sentinel_pasword"`},
		{"redis-sentinel://gate:s3cret@s1:26379/m?db=x", `db "x"`},
		{"redis-sentinel://gate:s3cret@s1:26379,,s2/m", "host 2: want host:port"},
		{"redis-sentinel://gate:s3cret@s1:port/m", "host 1: want host:port"},
		{"redis-sentinel://gate:s3/cret@s1/m", "host 1: want host:port"}, // an unescaped '/' in the password
		{"redis-sentinel://gate:s3cret@s1/m#x", "fragment"},
		{"redis-cluster://gate:s3cret@n1:7000/1", "only database 0"},
		{"redis-cluster://gate:s3cret@n1:7000?pool_size=3", "takes no parameters"},
		{"redis://gate:s3cret@host:notaport/0", "malformed URL"},
		{"redis-sentinal://gate:s3cret@s1/m", "invalid URL scheme"},
	} {
		err := CheckRedisURL(c.url)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3") {
			t.Errorf("%s: %v, want an error saying %q without the password", c.url, err, c.want)
		}
	}
}

func TestRedisURLHostsHideThePassword(t *testing.T) {
	for url, want := range map[string]string{
		"redis://gate:s3cret@r1:6379/0":                                     "r1:6379",
		"redis-sentinel://gate:s3cret@s1,s2:26380/any?sentinel_password=s3": "sentinel s1:26379,s2:26380 primary any",
		"redis-cluster://gate:s3cret@n1:7000,n2:7001":                       "cluster n1:7000,n2:7001",
		"redis://gate:s3cret@r1:x/0":                                        "?",
	} {
		if got := RedisURLHosts(url); got != want {
			t.Errorf("%s: %q, want %q", url, got, want)
		}
	}
}
