package devstack

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLoadStackConfig(t *testing.T) {
	t.Setenv("BIND_IP", "127.0.0.9")
	t.Setenv("OPS_PORT_BASE", "9500")
	t.Setenv("UPDATE_EVERY", "5m")
	t.Setenv("GATE_HOSTS", "")
	c, err := LoadStackConfig("/repo")
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "/repo/.data" || c.GateAddr != "127.0.0.9:8088" || c.EdgeMetricsAddr != "127.0.0.9:9499" ||
		c.UpdateEvery != 5*time.Minute || c.GateHosts != "127.0.0.1,localhost" {
		t.Errorf("config %+v", c)
	}
	t.Setenv("UPDATE_EVERY", "soon")
	if _, err := LoadStackConfig("/repo"); err == nil || !strings.HasPrefix(err.Error(), "UPDATE_EVERY") {
		t.Errorf("a bad UPDATE_EVERY: %v, want an error naming it", err)
	}
}

func TestCheckPortsNamesTheVariableOfATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	c := StackConfig{IP: "127.0.0.1", TemporalPort: taken, UIPort: taken, MinIOPort: taken, ConsolePort: taken, RedisPort: taken}
	if err := c.CheckPorts(); err == nil || !strings.Contains(err.Error(), "set TEMPORAL_PORT") || !strings.Contains(err.Error(), strconv.Itoa(taken)) {
		t.Errorf("%v: want the taken port and its variable named", err)
	}
}
