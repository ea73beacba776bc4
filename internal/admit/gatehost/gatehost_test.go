package gatehost

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

func valid() *Settings {
	return &Settings{Origin: "http://o", DataCenter: "ams", Strategy: "counters", MaxBodyBytes: 1, MaxHeaderKiB: 1,
		SnapshotEvery: time.Second, DiscoverEvery: time.Second, ReportEvery: time.Second, Hosts: "*"}
}

func TestCheckFillsTheDefaultsThatDependOnOthers(t *testing.T) {
	s := valid()
	s.RedisURL = "redis://r:6379/0"
	s.Hosts = "Shop.example.com, 127.0.0.1"
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if s.AnywhereRedisURL != s.RedisURL {
		t.Errorf("the Anywhere Redis defaults to the data center's: %q", s.AnywhereRedisURL)
	}
	if !slices.Equal(s.hosts, []string{"shop.example.com", "127.0.0.1"}) {
		t.Errorf("hosts %q", s.hosts)
	}
	if !strings.HasPrefix(s.GateID, "ams-") || len(s.GateID) > 64 {
		t.Errorf("default gate id %q: want the data center first, at most 64 characters", s.GateID)
	}
	other := valid()
	if err := other.Check(); err != nil || other.GateID == s.GateID {
		t.Errorf("two processes got the same gate id %q (%v): the room keeps one report per gate", other.GateID, err)
	}
}

func TestCheckNamesTheFlag(t *testing.T) {
	for _, c := range []struct {
		change func(*Settings)
		want   string
	}{
		{func(s *Settings) { s.Origin = "" }, "--origin (env GATE_ORIGIN) is required"},
		{func(s *Settings) { s.ReportEvery = 0 }, "--report-every must be positive"},
		{func(s *Settings) { s.Hosts = "a.example:80" }, "--hosts (env GATE_HOSTS)"},
		{func(s *Settings) { s.Hosts = "" }, "--hosts (env GATE_HOSTS): no host names"},
		{func(s *Settings) { s.Strategy = "even" }, `--strategy "even"`},
	} {
		s := valid()
		c.change(s)
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want an error saying %q", err, c.want)
		}
	}
}

func TestRedisURLErrorsHideThePassword(t *testing.T) {
	_, _, err := openCounters("redis://user:s3cret@host:notaport/0", "", "counters", quietLog())
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error %v: must fail without showing the password", err)
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// --redis-sentinel names the data center's Redis by its Sentinels (the
// Anywhere Redis defaults to it, as to --redis-url), with or without the
// URL's scheme; --anywhere-redis-sentinel the Anywhere one alone.
func TestRedisSentinelFlags(t *testing.T) {
	s := valid()
	s.RedisSentinel = "gate:pw@s1:26379,s2:26379/dc"
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if s.RedisURL != "redis-sentinel://gate:pw@s1:26379,s2:26379/dc" || s.AnywhereRedisURL != s.RedisURL {
		t.Errorf("--redis-sentinel: data center %q, Anywhere %q", s.RedisURL, s.AnywhereRedisURL)
	}
	s = valid()
	s.RedisURL = "redis://r:6379/0"
	s.AnywhereRedisSentinel = "redis-sentinel://s1,s2,s3/anywhere"
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if s.AnywhereRedisURL != "redis-sentinel://s1,s2,s3/anywhere" {
		t.Errorf("--anywhere-redis-sentinel: Anywhere %q", s.AnywhereRedisURL)
	}
	for _, c := range []struct {
		change func(*Settings)
		want   string
	}{
		{func(s *Settings) { s.RedisURL, s.RedisSentinel = "redis://r:6379/0", "s1/dc" }, "--redis-url (env GATE_REDIS_URL) and --redis-sentinel"},
		{func(s *Settings) { s.AnywhereRedisSentinel = "gate:s3cret@s1:26379" }, "--anywhere-redis-url (env GATE_ANYWHERE_REDIS_URL): redis URL: redis-sentinel URL: want the primary's name"},
		{func(s *Settings) { s.RedisURL = "redis-cluster://gate:s3cret@n1:7000/2" }, "--redis-url (env GATE_REDIS_URL): redis URL: redis-cluster URL: path"},
	} {
		s := valid()
		c.change(s)
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%v, want an error saying %q without the password", err, c.want)
		}
	}
}
