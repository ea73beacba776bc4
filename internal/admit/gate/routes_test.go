package gate

import (
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// registryWith puts rooms (their settings) into a registry, each with a
// fresh snapshot.
func registryWith(t testing.TB, rooms ...admit.Settings) *Registry {
	t.Helper()
	reg := NewRegistry(admit.Gate{DataCenter: "ams", ID: "ams-1"})
	for _, s := range rooms {
		if s.TotalActiveUsers == 0 {
			s.TotalActiveUsers, s.NewUsersPerMinute = 10, 10
		}
		r, err := admit.NewRoom(s, 60, t0)
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Update(r.Snapshot, nil, t0); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func TestRouting(t *testing.T) {
	reg := registryWith(t,
		admit.Settings{Name: "everything"}, // no host, path /
		admit.Settings{Name: "shop", Path: "/shop/"},
		admit.Settings{Name: "shop-cart", Path: "/shop/cart"},
		admit.Settings{Name: "tickets", Host: "tickets.example.com"},
		admit.Settings{Name: "tickets-vip", Host: "tickets.example.com", Path: "/vip/"},
		admit.Settings{Name: "api", Path: "/api/", AdditionalRoutes: []admit.Route{{Host: "api.example.com", Path: "/"}}},
	)
	for _, c := range []struct{ host, path, want string }{
		{"example.com", "/", "everything"},
		{"example.com", "/about", "everything"},
		{"example.com", "/shop/", "shop"},
		{"example.com", "/shop/item/7", "shop"},
		{"example.com", "/shop", "everything"}, // "/shop/" covers only what is below it
		{"example.com", "/shop/cart", "shop-cart"},
		{"example.com", "/shop/cart/items", "shop-cart"},
		{"example.com", "/shop/cartoons", "shop"}, // "/shop/cart" covers its own segment, not a prefix of a word
		{"tickets.example.com", "/", "tickets"},
		{"TICKETS.example.com:8443", "/x", "tickets"}, // host case and port do not matter
		{"tickets.example.com.", "/x", "tickets"},
		{"tickets.example.com", "/vip/row/1", "tickets-vip"},
		// a longer path without a host beats a shorter one with the host
		{"tickets.example.com", "/shop/item", "shop"},
		{"api.example.com", "/anything", "api"},
		{"example.com", "/api/v1", "api"},
		// dot segments are resolved the way the origin will read them
		{"example.com", "/blog/../shop/item", "shop"},
		{"example.com", "/shop//../../shop/cart/x", "shop-cart"},
		{"example.com", "/shop/./cart", "shop-cart"},
	} {
		got := reg.Match(c.host, c.path)
		if got == nil || got.Name() != c.want {
			name := "<none>"
			if got != nil {
				name = got.Name()
			}
			t.Errorf("%s%s: room %s, want %s", c.host, c.path, name, c.want)
		}
	}
}

func TestRoutingWithoutCatchAll(t *testing.T) {
	reg := registryWith(t, admit.Settings{Name: "shop", Path: "/shop/"}, admit.Settings{Name: "h", Host: "h.example.com", Path: "/x/"})
	for _, c := range []struct{ host, path string }{{"example.com", "/"}, {"example.com", "/shopping"}, {"other.example.com", "/x/1"}} {
		if r := reg.Match(c.host, c.path); r != nil {
			t.Errorf("%s%s matched room %s, want none (straight to the origin)", c.host, c.path, r.Name())
		}
	}
}

// A deleted room stops taking traffic; a room whose routes change is
// re-indexed; two rooms on the same route resolve the same way everywhere.
func TestRoutingFollowsSnapshots(t *testing.T) {
	reg := registryWith(t, admit.Settings{Name: "b-room", Path: "/x/"}, admit.Settings{Name: "a-room", Path: "/x/"})
	if r := reg.Match("h", "/x/1"); r == nil || r.Name() != "a-room" {
		t.Fatalf("conflicting routes: want the room whose name sorts first, got %v", r)
	}
	a := reg.Room("a-room")
	moved := *a.Snapshot()
	moved.Settings.Path = "/y/"
	moved.SettingsVersion++
	if err := reg.Update(&moved, nil, t0); err != nil {
		t.Fatal(err)
	}
	if r := reg.Match("h", "/x/1"); r == nil || r.Name() != "b-room" {
		t.Errorf("after a-room moved to /y/, /x/ belongs to b-room, got %v", r)
	}
	if r := reg.Match("h", "/y/1"); r == nil || r.Name() != "a-room" {
		t.Errorf("a-room's new path /y/ is not routed to it: %v", r)
	}
	deleted := *reg.Room("b-room").Snapshot()
	deleted.Status = admit.StatusDeleted
	if err := reg.Update(&deleted, nil, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if r := reg.Match("h", "/x/1"); r != nil {
		t.Errorf("a deleted room still takes traffic: %s", r.Name())
	}
	reg.Remove("a-room")
	if r := reg.Match("h", "/y/1"); r != nil {
		t.Errorf("a removed room still takes traffic: %s", r.Name())
	}
}

func BenchmarkRouteMatch(b *testing.B) {
	reg := NewRegistry(admit.Gate{DataCenter: "ams", ID: "ams-1"})
	for _, s := range []admit.Settings{{Name: "all"}, {Name: "shop", Path: "/shop/"}, {Name: "h", Host: "h.example.com", Path: "/x/"}} {
		s.TotalActiveUsers, s.NewUsersPerMinute = 10, 10
		r, _ := admit.NewRoom(s, 60, t0)
		_ = reg.Update(r.Snapshot, nil, t0)
	}
	b.ReportAllocs()
	for b.Loop() {
		if reg.Match("example.com:8080", "/shop/item/42") == nil {
			b.Fatal("no room")
		}
	}
}
