package devstack

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
)

// A port handed out from the kernel's ephemeral range may become the local
// port of some outgoing connection before the server binds it (make
// cluster-test: a gate's port taken so, five restarts on it, given up).
// FreePort picks below the range, and the port is free.
func TestFreePortIsOutsideTheEphemeralRange(t *testing.T) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip(err)
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(data), &lo, &hi); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p >= lo && p <= hi {
			t.Fatalf("FreePort: %d, in the ephemeral range %d-%d", p, lo, hi)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("FreePort: %d is not free: %v", p, err)
		}
		l.Close()
	}
}
