// Package testenv gives integration tests the real parts: a Temporal dev
// server, a MinIO and a Redis on free ports, started once per test package
// (from TestMain) and stopped afterwards.
package testenv

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
)

// Env is a running stack for tests.
type Env struct {
	Temporal *devstack.Temporal
	MinIO    *devstack.MinIO
	Redis    *devstack.Redis
	Client   client.Client
	Store    *s3.Store
	// MinIO2 and Store2 are a second, separate MinIO (Options.SecondMinIO),
	// for copies between two stores.
	MinIO2 *devstack.MinIO
	Store2 *s3.Store
	dir    string
}

// Options selects the parts to start.
type Options struct {
	Temporal    bool
	MinIO       bool
	SecondMinIO bool
	Redis       bool // Debian's redis-server (the gates' shared counters)
}

// Start starts the parts. Their logs go to a file in the temp dir, printed
// by Stop when the tests failed.
func Start(o Options) (*Env, error) {
	dir, err := os.MkdirTemp("", "edgeflow-test-")
	if err != nil {
		return nil, err
	}
	e := &Env{dir: dir}
	logs, err := os.Create(dir + "/stack.log")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if o.MinIO {
		e.MinIO, err = devstack.StartMinIO(ctx, devstack.MinIOOptions{DataDir: dir + "/minio", AccessKey: "testaccess", SecretKey: "testsecret123", Logs: logs})
		if err != nil {
			e.Stop()
			return nil, err
		}
		e.Store, err = s3.New(s3.Config{Endpoint: e.MinIO.Endpoint, AccessKey: "testaccess", SecretKey: "testsecret123"})
		if err != nil {
			e.Stop()
			return nil, err
		}
	}
	if o.SecondMinIO {
		e.MinIO2, err = devstack.StartMinIO(ctx, devstack.MinIOOptions{DataDir: dir + "/minio2", AccessKey: "testaccess2", SecretKey: "testsecret456", Logs: logs})
		if err != nil {
			e.Stop()
			return nil, err
		}
		e.Store2, err = s3.New(s3.Config{Endpoint: e.MinIO2.Endpoint, AccessKey: "testaccess2", SecretKey: "testsecret456"})
		if err != nil {
			e.Stop()
			return nil, err
		}
	}
	if o.Redis {
		e.Redis, err = devstack.StartRedis(ctx, devstack.RedisOptions{Dir: dir, Logs: logs})
		if err != nil {
			e.Stop()
			return nil, err
		}
	}
	if o.Temporal {
		e.Temporal, err = devstack.StartTemporal(ctx, devstack.TemporalOptions{Headless: true, Logs: logs})
		if err != nil {
			e.Stop()
			return nil, err
		}
		e.Client, err = client.Dial(client.Options{HostPort: e.Temporal.HostPort,
			Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
		if err != nil {
			e.Stop()
			return nil, err
		}
	}
	return e, nil
}

// Stop stops everything and removes the data.
func (e *Env) Stop() {
	if e.Client != nil {
		e.Client.Close()
	}
	if e.Temporal != nil {
		_ = e.Temporal.Stop(10 * time.Second)
	}
	if e.MinIO != nil {
		_ = e.MinIO.Stop(10 * time.Second)
	}
	if e.MinIO2 != nil {
		_ = e.MinIO2.Stop(10 * time.Second)
	}
	if e.Redis != nil {
		_ = e.Redis.Stop(10 * time.Second)
	}
	_ = os.RemoveAll(e.dir)
}

// Main runs a package's tests with an Env, for TestMain. With -short the
// Env is not started and env is nil: tests needing it skip themselves.
func Main(m *testing.M, o Options, env **Env) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	e, err := Start(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	e.Stop()
	os.Exit(code)
}

// Require skips a test under -short, where no Env is started.
func Require(t testing.TB, e *Env) {
	t.Helper()
	if e == nil {
		t.Skip("integration test: needs the real servers (not started with -short)")
	}
}
