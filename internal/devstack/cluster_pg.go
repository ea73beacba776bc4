package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PostgresOptions configures the cluster profile's PostgreSQL: a cluster
// of its own in Dir (never the package's system cluster), owned by and run
// as the postgres user, since initdb and postgres refuse to run as root.
type PostgresOptions struct {
	Dir      string // the data directory; created by initdb when empty
	Port     int    // 0: a free one
	User     string // the superuser Temporal connects as
	Password string
	Logs     io.Writer
}

// Postgres is a running PostgreSQL server.
type Postgres struct {
	*Process
	Addr    string // 127.0.0.1:port
	Port    int
	Version string // the server's major version: "15"
	bin     string
}

// PostgresBin finds the newest of Debian's PostgreSQL servers
// (/usr/lib/postgresql/<version>/bin), or $EDGEFLOW_POSTGRES_BIN_DIR.
func PostgresBin() (dir, version string, err error) {
	if d := os.Getenv("EDGEFLOW_POSTGRES_BIN_DIR"); d != "" {
		return d, filepath.Base(filepath.Dir(d)), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(dirs) == 0 {
		return "", "", errors.New("no PostgreSQL server in /usr/lib/postgresql/*/bin: apt-get install postgresql (`make cluster` installs it), or set EDGEFLOW_POSTGRES_BIN_DIR")
	}
	// Newest major version first: 15 sorts after 9 numerically, not as text.
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(a))))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(b))))
		return vb - va
	})
	dir = filepath.Dir(dirs[0])
	return dir, filepath.Base(filepath.Dir(dir)), nil
}

// asPostgres runs a PostgreSQL program as the postgres user: runuser when
// we are root (initdb and postgres refuse root), directly otherwise.
func asPostgres(bin string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", bin}, args...)...)
	}
	return exec.Command(bin, args...)
}

// chownPostgres hands path to the postgres user (when we are root).
func chownPostgres(paths ...string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("the postgres user (made by Debian's postgresql package): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, p := range paths {
		if err := os.Chown(p, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// StartPostgres creates the cluster in Dir on first use (initdb, password
// authentication over TCP only) and starts the server on loopback.
func StartPostgres(ctx context.Context, o PostgresOptions) (*Postgres, error) {
	bin, version, err := PostgresBin()
	if err != nil {
		return nil, err
	}
	if o.User == "" || o.Password == "" {
		return nil, errors.New("postgres: a user and a password are required")
	}
	if err := os.MkdirAll(filepath.Dir(o.Dir), 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(o.Dir, "PG_VERSION")); err != nil {
		if err := initPostgres(bin, o); err != nil {
			return nil, err
		}
	}
	// A server of an earlier run that outlived it (its parent was killed)
	// still holds the directory: stop it first.
	if _, err := os.Stat(filepath.Join(o.Dir, "postmaster.pid")); err == nil {
		_ = asPostgres(filepath.Join(bin, "pg_ctl"), "stop", "-D", o.Dir, "-m", "fast", "-w").Run()
	}
	return startServer(ctx, "postgres", o.Port == 0, func() (*Postgres, error) { return startPostgresOnce(ctx, bin, version, o) })
}

func initPostgres(bin string, o PostgresOptions) error {
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return err
	}
	// The password reaches initdb in a file only postgres reads, removed
	// right after: never on a command line or in a log.
	pwfile := filepath.Join(filepath.Dir(o.Dir), ".pgpass-init")
	if err := os.WriteFile(pwfile, []byte(o.Password+"\n"), 0o600); err != nil {
		return err
	}
	defer func() { _ = os.Remove(pwfile) }() // initdb has read it, or failed and said so
	if err := chownPostgres(o.Dir, pwfile); err != nil {
		return err
	}
	cmd := asPostgres(filepath.Join(bin, "initdb"), "-D", o.Dir, "-U", o.User, "--pwfile", pwfile,
		"--auth-host=scram-sha-256", "--auth-local=peer", "-E", "UTF8", "--locale=C.UTF-8")
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(o.Dir) // a half-made cluster would never be made again
		return fmt.Errorf("initdb %s: %v\n%s", o.Dir, err, out)
	}
	return nil
}

func startPostgresOnce(ctx context.Context, bin, version string, o PostgresOptions) (*Postgres, error) {
	port, err := freePortOr(o.Port)
	if err != nil {
		return nil, err
	}
	// TCP on loopback only, no Unix socket (none of the system cluster's
	// directories is touched); enough connections for four Temporal
	// services' pools.
	cmd := asPostgres(filepath.Join(bin, "postgres"), "-D", o.Dir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "max_connections=300",
		"-c", "fsync=off", "-c", "synchronous_commit=off")
	p, err := start("postgresql", cmd, o.Logs)
	if err != nil {
		return nil, err
	}
	pg := &Postgres{Process: p, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Version: version, bin: bin}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if exited, err := p.Exited(); exited {
			return nil, p.failed("postgres on %s exited during start: %v", pg.Addr, err)
		}
		if out, err := exec.Command(filepath.Join(bin, "pg_isready"), "-h", "127.0.0.1", "-p", strconv.Itoa(port)).CombinedOutput(); err == nil {
			return pg, nil
		} else if time.Now().After(deadline) {
			_ = p.Stop(10 * time.Second)
			return nil, fmt.Errorf("postgres at %s not ready after 60s (%s)\n--- its last log lines ---\n%s", pg.Addr, strings.TrimSpace(string(out)), p.log.String())
		}
		select {
		case <-ctx.Done():
			_ = p.Stop(10 * time.Second)
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
