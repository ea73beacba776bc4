package devstack

import (
	"bufio"
	"net"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// A connection through the balancer reaches a live node even when the next
// node in turn is down (stopped), every time.
func TestBalancerSkipsAStoppedNode(t *testing.T) {
	live, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	go func() {
		for {
			c, err := live.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = c.Write([]byte("live\n")) }()
		}
	}()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close() // a node that is down: its port refuses connections
	b, err := newBalancer([]string{deadAddr, live.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	for i := range 6 {
		c, err := net.Dial("tcp", b.addr)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if line != "live\n" {
			t.Fatalf("connection %d: got %q, %v; want the live node's answer", i, line, err)
		}
	}
}

// Each service's config lists every service's ports (so they find each
// other), the shards, and its own metrics port, as YAML the server reads.
func TestTemporalConfigListsEveryService(t *testing.T) {
	var services []temporalService
	for i, name := range TemporalServices {
		s := temporalService{Name: name, GRPC: 7000 + i, Membership: 7100 + i, Metrics: 7200 + i}
		if name == "frontend" {
			s.HTTP = 7300
		}
		services = append(services, s)
	}
	var out strings.Builder
	if err := temporalConfigTemplate.Execute(&out, temporalConfig{Shards: 4, DBAddr: "127.0.0.1:5432", DBUser: "temporal",
		DBPassword: `p"w`, Services: services, Self: services[1], DynamicFile: "/d.yaml", FrontendGRPC: 7002, Stores: temporalStores}); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Persistence struct {
			NumHistoryShards int    `yaml:"numHistoryShards"`
			DefaultStore     string `yaml:"defaultStore"`
			VisibilityStore  string `yaml:"visibilityStore"`
			Datastores       map[string]struct {
				SQL struct {
					DatabaseName string `yaml:"databaseName"`
					ConnectAddr  string `yaml:"connectAddr"`
					Password     string `yaml:"password"`
				} `yaml:"sql"`
			} `yaml:"datastores"`
		} `yaml:"persistence"`
		Global struct {
			Metrics struct {
				Prometheus struct {
					ListenAddress string `yaml:"listenAddress"`
				} `yaml:"prometheus"`
			} `yaml:"metrics"`
		} `yaml:"global"`
		Services map[string]struct {
			RPC struct {
				GRPCPort       int `yaml:"grpcPort"`
				MembershipPort int `yaml:"membershipPort"`
				HTTPPort       int `yaml:"httpPort"`
			} `yaml:"rpc"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(out.String()), &cfg); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if cfg.Persistence.NumHistoryShards != 4 || cfg.Global.Metrics.Prometheus.ListenAddress != "127.0.0.1:7201" {
		t.Errorf("shards %d, metrics %q; want 4 and matching's own 127.0.0.1:7201", cfg.Persistence.NumHistoryShards, cfg.Global.Metrics.Prometheus.ListenAddress)
	}
	// Both datastores, from one template block: each its own database, on
	// the same server with the same (quoted) password.
	for store, db := range map[string]string{cfg.Persistence.DefaultStore: "temporal", cfg.Persistence.VisibilityStore: "temporal_visibility"} {
		sql := cfg.Persistence.Datastores[store].SQL
		if sql.DatabaseName != db || sql.ConnectAddr != "127.0.0.1:5432" || sql.Password != `p"w` {
			t.Errorf("datastore %q: %+v; want database %s on 127.0.0.1:5432", store, sql, db)
		}
	}
	for i, name := range TemporalServices {
		s := cfg.Services[name]
		if s.RPC.GRPCPort != 7000+i || s.RPC.MembershipPort != 7100+i {
			t.Errorf("%s: %+v", name, s.RPC)
		}
	}
	if cfg.Services["frontend"].RPC.HTTPPort != 7300 {
		t.Errorf("frontend http port %d", cfg.Services["frontend"].RPC.HTTPPort)
	}
}

// Temporal keeps a service's membership port in a smallint column: the
// cluster picks it below 32768 (a kernel-chosen port failed every
// heartbeat with "value is out of range for type smallint").
func TestMembershipPortFitsASmallint(t *testing.T) {
	for range 20 {
		p, err := freePortBelow(32768)
		if err != nil {
			t.Fatal(err)
		}
		if p >= 32768 || p < 1024 {
			t.Fatalf("membership port %d", p)
		}
	}
}

// The built-in TemporalWorkerDeploymentVersion is not our Version: the
// cluster once took it for one and never created Version, and every
// publish lane failed with "no mapping defined for search attribute Version".
func TestListsAttributeMatchesWholeNames(t *testing.T) {
	listing := "                 Name                    Type    \n  TemporalWorkerDeploymentVersion     Keyword    \n  Package                             Keyword    \n"
	if listsAttribute(listing, "Version") {
		t.Error("Version found in a listing without it")
	}
	if !listsAttribute(listing, "Package") {
		t.Error("Package not found in a listing with it")
	}
}
