package deploy

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

// redisCommand is the command line docker-compose.yml runs every Redis
// with, its variables replaced by values.
func redisCommand(t *testing.T, values map[string]string) []string {
	t.Helper()
	services, _ := loadExposure(t)
	var command []string
	for _, name := range slices.Sorted(maps.Keys(services)) {
		s := services[name]
		if !strings.HasPrefix(s.Image, "redis:") {
			continue
		}
		if command != nil && !slices.Equal(command, s.Command) {
			t.Fatalf("service %q runs another Redis command line than the others: %q, %q", name, s.Command, command)
		}
		command = s.Command
	}
	if command == nil {
		t.Fatal("docker-compose.yml runs no redis service")
	}
	out := make([]string, 0, len(command))
	for _, arg := range command {
		var unknown []string
		arg = interpolation.ReplaceAllStringFunc(arg, func(m string) string {
			name := interpolation.FindStringSubmatch(m)[1]
			v, ok := values[name]
			if !ok {
				unknown = append(unknown, name)
			}
			return v
		})
		if unknown != nil {
			t.Fatalf("the Redis command line reads %v, which this test gives no value", unknown)
		}
		out = append(out, arg)
	}
	return out
}

// The gate user of docker-compose.yml's Redis can do what the gates do, on
// a real redis-server run with the file's command line: every counter,
// session ledger, aggregate and revocation call, logged in through the
// gate's own URL parsing, leaves no denial in Redis's ACL log; and it can
// do nothing else: no other key, no administration, no flush. Without the
// password nothing answers.
func TestGateRedisUserCanDoWhatTheGateDoesAndNoMore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	const adminPass, gatePass = "admin-test-password-0123456789", "gate-test-password-0123456789"
	command := redisCommand(t, map[string]string{"REDIS_PASSWORD": adminPass, "REDIS_GATE_PASSWORD": gatePass})
	if user, _ := aclUser(command); user != gateUser {
		t.Fatalf("the Redis command line defines no user %s: %q", gateUser, command)
	}
	bin, err := devstack.FindTool(command[0])
	if err != nil {
		t.Fatalf("%v (Debian: apt-get install redis-server; make test installs it)", err)
	}
	// On a Unix socket of its own: no TCP port to race for.
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, append(command[1:], "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700", "--dir", dir)...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	admin := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, Password: adminPass})
	defer admin.Close()
	for admin.Ping(ctx).Err() != nil {
		select {
		case err := <-exited:
			t.Fatalf("redis-server %q exited: %v\n%s", command[1:], err, log.String())
		case <-ctx.Done():
			t.Fatalf("redis-server did not answer: %v\n%s", admin.Ping(context.Background()).Err(), log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	anonymous := redis.NewClient(&redis.Options{Network: "unix", Addr: sock})
	defer anonymous.Close()
	if err := anonymous.Set(ctx, "admit/x", "1", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("a client without the password wrote: %v (want NOAUTH)", err)
	}
	if err := admin.Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
		t.Fatal(err)
	}

	wrong, err := gate.NewRedisClient("unix://" + gateUser + ":not-the-password@" + sock + "?db=0")
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	if err := wrong.Ping(ctx).Err(); err == nil {
		t.Fatal("the gate user logged in with a wrong password: the URL's password is not checked")
	}
	if err := admin.Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
		t.Fatal(err)
	}

	client, err := gate.NewRedisClient("unix://" + gateUser + ":" + gatePass + "@" + sock + "?db=0")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if who, err := client.Do(ctx, "ACL", "WHOAMI").Text(); err == nil && who != gateUser {
		t.Fatalf("the gate's client is logged in as %q, not %s", who, gateUser)
	}
	if err := admin.Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil { // WHOAMI may be denied: not a gate call
		t.Fatal(err)
	}
	exerciseGateRedis(ctx, t, client)

	if denied, err := admin.Do(ctx, "ACL", "LOG").Slice(); err != nil {
		t.Fatal(err)
	} else if len(denied) > 0 {
		t.Errorf("Redis denied the gate user %d times doing what the gate does (ACL LOG): %v", len(denied), denied)
	}

	for _, cmd := range [][]any{
		{"FLUSHALL"}, {"CONFIG", "GET", "requirepass"}, {"KEYS", "*"}, {"ACL", "LIST"},
		{"SET", "console/session", "x"}, {"GET", "other"}, {"CLIENT", "LIST"}, {"SHUTDOWN"},
		{"EVAL", "return redis.call('FLUSHALL')", "0"},
		{"EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "migrate/job"},
	} {
		if err := client.Do(ctx, cmd...).Err(); !deniedByACL(err) {
			t.Errorf("the gate user ran %q: %v (want a permission error)", cmd, err)
		}
	}
	if n, err := admin.Exists(ctx, "console/session", "migrate/job").Result(); err != nil || n != 0 {
		t.Errorf("keys outside admit/ written by the gate user: %d (%v)", n, err)
	}
	if n, err := admin.DBSize(ctx).Result(); err != nil || n == 0 {
		t.Errorf("the gate's calls left no key in Redis (%d, %v): the test exercised nothing", n, err)
	}
}

// deniedByACL tells Redis's refusals for want of permission, from a command
// or from a script.
func deniedByACL(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "NOPERM") || strings.Contains(err.Error(), "can't run this command") ||
		strings.Contains(err.Error(), "No permissions"))
}

// exerciseGateRedis makes each kind of call the gates make on their Redis,
// through their own code, and fails on any error.
func exerciseGateRedis(ctx context.Context, t *testing.T, client redis.UniversalClient) {
	t.Helper()
	store := gate.RedisCounter{Client: client}
	const room, visitor = "cdn", "v1"
	length := 12 * time.Second
	now := time.Now()
	minute := admit.MinuteOf(now, length)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s as the gate user: %v", what, err)
		}
	}
	must("PING", store.Ping(ctx))
	_, err := store.TakeBelow(ctx, admit.CounterKey(room, minute, "new", "dc1"), 5, minute.Add(3*length))
	must("take a slot", err)
	_, err = store.Load(ctx, admit.CounterKey(room, minute, "new", "dc1"))
	must("read a counter", err)
	_, _, err = store.FirstVisits(ctx, room, []admit.Sighting{{Visitor: visitor, Minute: minute}}, 3*length)
	must("settle first visits", err)
	must("move a session", store.MoveSession(ctx, room, time.Time{}, now.Add(time.Minute)))
	_, err = store.SessionsEnded(ctx, room, now, now.Add(30*time.Second))
	must("read ended sessions", err)

	// The gates sign what they share (a key derived from their cookie keys).
	key, err := keyring.Generate("acl-test")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := keyring.New(key)
	if err != nil {
		t.Fatal(err)
	}
	signer := gate.NewRedisSigner(ring)
	agg := &gate.Aggregator{Client: client, DataCenter: "dc1", Holder: "gate-1", Signer: signer, Logger: slog.New(slog.DiscardHandler),
		Live: client}
	rep := admit.Report{Room: room, DataCenter: "dc1", Gate: "gate-1", Minute: minute, Seq: 1, NewVisitors: 1}
	must("write the data center's counts", agg.Write(ctx, rep, length))
	must("mark counts sent directly", agg.MarkDirect(ctx, rep, length))
	rooms := []gate.AggregateRoom{{Name: room, Length: length}}
	sink := func(context.Context, admit.Report) error { return nil }
	agg.Tick(ctx, now, rooms, sink)
	if !agg.Holds(now) {
		t.Error("the gate user could not take the data center's report lease")
	}
	agg.Leave(ctx, now.Add(2*length), rooms, sink)
	// The holder wrote the room's live view at its tick; room status and
	// the console read it (with the gate's URL: ADMIT_REDIS_URL).
	if _, err := (&roomclient.LiveSource{Redis: client}).Read(ctx, room, &admit.Snapshot{}); err != nil {
		t.Errorf("read the live view: %v", err)
	}

	rev := &gate.Revocations{Client: client, Rooms: func() []string { return []string{room} }, Signer: signer, Logger: slog.New(slog.DiscardHandler)}
	rev.Revoke(room, visitor, now.Add(time.Minute), now)
	must("write a revocation", rev.Flush(ctx))
	must("read revocations", rev.Pull(ctx))
}
