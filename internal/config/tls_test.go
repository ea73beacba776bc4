package config_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Temporal: true}, &env)
}

// mTLS through the SDK's environment configuration. The dev server speaks
// no TLS, so the test puts a TLS-terminating proxy in front of it that
// demands a client certificate from its CA: a client configured only by
// TEMPORAL_ADDRESS and TEMPORAL_TLS_* (or a profile of the TOML file)
// gets through; one without its certificate, or with the retired
// TEMPORAL_TLS_CERT names, does not.
func TestMutualTLSThroughEnvConfig(t *testing.T) {
	testenv.Require(t, env)
	dir := t.TempDir()
	ca, caKey := newCA(t)
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", ca.Raw)
	serverCert := issue(t, ca, caKey, "temporal.test", x509.ExtKeyUsageServerAuth, dir, "server")
	issue(t, ca, caKey, "edgeflow-worker", x509.ExtKeyUsageClientAuth, dir, "client")
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	proxy := tlsProxy(t, env.Temporal.HostPort, &tls.Config{Certificates: []tls.Certificate{serverCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}})

	tlsEnv := map[string]string{
		"TEMPORAL_ADDRESS":                 proxy,
		"TEMPORAL_NAMESPACE":               env.Temporal.Namespace,
		"TEMPORAL_TLS_CLIENT_CERT_PATH":    filepath.Join(dir, "client.pem"),
		"TEMPORAL_TLS_CLIENT_KEY_PATH":     filepath.Join(dir, "client-key.pem"),
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH": filepath.Join(dir, "ca.pem"),
		"TEMPORAL_TLS_SERVER_NAME":         "temporal.test",
	}
	t.Run("environment", func(t *testing.T) {
		setEnv(t, tlsEnv)
		mustReach(t, config.Temporal{})
	})
	t.Run("profile", func(t *testing.T) {
		// Empty variables are unset, as everywhere in the project: the
		// profile's address holds.
		setEnv(t, map[string]string{"TEMPORAL_ADDRESS": "", "TEMPORAL_NAMESPACE": ""})
		file := filepath.Join(dir, "temporal.toml")
		toml := `[profile.staging]
address = "` + proxy + `"
namespace = "` + env.Temporal.Namespace + `"
[profile.staging.tls]
client_cert_path = "` + tlsEnv["TEMPORAL_TLS_CLIENT_CERT_PATH"] + `"
client_key_path = "` + tlsEnv["TEMPORAL_TLS_CLIENT_KEY_PATH"] + `"
server_ca_cert_path = "` + tlsEnv["TEMPORAL_TLS_SERVER_CA_CERT_PATH"] + `"
server_name = "temporal.test"
`
		if err := os.WriteFile(file, []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
		mustReach(t, config.Temporal{ConfigFile: file, Profile: "staging"})
	})
	t.Run("flags", func(t *testing.T) {
		// The temporal CLI's flags alone, over an environment without TLS.
		setEnv(t, map[string]string{"TEMPORAL_ADDRESS": "127.0.0.1:1"})
		var tc config.Temporal
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		tc.RegisterFlags(fs)
		if err := fs.Parse([]string{"--address", proxy, "--namespace", env.Temporal.Namespace,
			"--tls-cert-path", tlsEnv["TEMPORAL_TLS_CLIENT_CERT_PATH"], "--tls-key-path", tlsEnv["TEMPORAL_TLS_CLIENT_KEY_PATH"],
			"--tls-ca-path", tlsEnv["TEMPORAL_TLS_SERVER_CA_CERT_PATH"], "--tls-server-name", "temporal.test"}); err != nil {
			t.Fatal(err)
		}
		mustReach(t, tc)
	})
	t.Run("no client certificate", func(t *testing.T) {
		without := map[string]string{}
		for k, v := range tlsEnv {
			without[k] = v
		}
		without["TEMPORAL_TLS_CLIENT_CERT_PATH"], without["TEMPORAL_TLS_CLIENT_KEY_PATH"] = "", ""
		setEnv(t, without)
		if err := reach(config.Temporal{}); err == nil {
			t.Fatal("reached the server through the mTLS proxy without a client certificate")
		}
	})
	t.Run("retired names", func(t *testing.T) {
		setEnv(t, map[string]string{"TEMPORAL_TLS_CERT": tlsEnv["TEMPORAL_TLS_CLIENT_CERT_PATH"]})
		_, err := (&config.Temporal{}).Options(nil)
		if err == nil || !strings.Contains(err.Error(), "TEMPORAL_TLS_CLIENT_CERT_PATH") {
			t.Fatalf("TEMPORAL_TLS_CERT: %v; want it refused naming TEMPORAL_TLS_CLIENT_CERT_PATH", err)
		}
	})
}

func setEnv(t *testing.T, vars map[string]string) {
	for k, v := range vars {
		t.Setenv(k, v)
	}
}

func reach(tc config.Temporal) error {
	c, err := tc.Dial(nil)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.WorkflowService().GetSystemInfo(ctx, nil)
	return err
}

func mustReach(t *testing.T, tc config.Temporal) {
	t.Helper()
	if err := reach(tc); err != nil {
		t.Fatalf("through the mTLS proxy: %v", err)
	}
}

// tlsProxy terminates TLS with cfg and passes the bytes on to target; it
// returns its address.
func tlsProxy(t *testing.T, target string, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				if err := conn.(*tls.Conn).Handshake(); err != nil {
					return // no client certificate, or not ours
				}
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(up, conn); done <- struct{}{} }()
				go func() { _, _ = io.Copy(conn, up); done <- struct{}{} }()
				<-done
			})
		}
	})
	return ln.Addr().String()
}

func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "edgeflow test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// issue signs a certificate for name, writes NAME.pem and NAME-key.pem
// into dir, and returns it for a TLS config.
func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string, usage x509.ExtKeyUsage, dir, file string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, file+".pem"), "CERTIFICATE", der)
	writePEM(t, filepath.Join(dir, file+"-key.pem"), "PRIVATE KEY", keyDER)
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, file+".pem"), filepath.Join(dir, file+"-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
