// Package config reads the settings every process shares — how to reach
// Temporal and the object stores, and the bucket names — from flags with
// defaults taken from the environment, so one binary works on a laptop and on
// a cluster without code changes.
package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// Env returns the environment value of key, or def when unset or empty.
func Env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// EnvInt is Env for integers; a malformed value is reported, not ignored.
func EnvInt(key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "warning: %s=%q is not an integer; using %d\n", key, v, def)
		return def
	}
	return n
}

// EnvBool is Env for booleans.
func EnvBool(key string, def bool) bool {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "warning: %s=%q is not a boolean; using %v\n", key, v, def)
		return def
	}
	return b
}

// EnvDuration is Env for durations.
func EnvDuration(key string, def time.Duration) time.Duration {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "warning: %s=%q is not a duration; using %s\n", key, v, def)
		return def
	}
	return d
}

// Temporal says how to reach the Temporal frontend.
type Temporal struct {
	HostPort   string
	Namespace  string
	TLSCert    string // client certificate file (mTLS)
	TLSKey     string
	TLSCA      string // CA bundle for the server certificate
	ServerName string
	TLS        bool // TLS with the system roots, without a client certificate
}

// RegisterFlags adds the Temporal flags to fs, defaulting from TEMPORAL_* env vars.
func (t *Temporal) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&t.HostPort, "temporal-address", Env("TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port (env TEMPORAL_ADDRESS)")
	fs.StringVar(&t.Namespace, "namespace", Env("TEMPORAL_NAMESPACE", "default"), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	fs.StringVar(&t.TLSCert, "tls-cert", Env("TEMPORAL_TLS_CERT", ""), "client certificate file for mTLS (env TEMPORAL_TLS_CERT)")
	fs.StringVar(&t.TLSKey, "tls-key", Env("TEMPORAL_TLS_KEY", ""), "client key file for mTLS (env TEMPORAL_TLS_KEY)")
	fs.StringVar(&t.TLSCA, "tls-ca", Env("TEMPORAL_TLS_CA", ""), "CA bundle for the server certificate (env TEMPORAL_TLS_CA)")
	fs.StringVar(&t.ServerName, "tls-server-name", Env("TEMPORAL_TLS_SERVER_NAME", ""), "server name to verify (env TEMPORAL_TLS_SERVER_NAME)")
	fs.BoolVar(&t.TLS, "tls", EnvBool("TEMPORAL_TLS", false), "use TLS with the system roots (env TEMPORAL_TLS)")
}

func (t Temporal) tlsConfig() (*tls.Config, error) {
	if !t.TLS && t.TLSCert == "" && t.TLSCA == "" {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
	if (t.TLSCert == "") != (t.TLSKey == "") {
		return nil, errors.New("temporal TLS: --tls-cert and --tls-key must be given together")
	}
	if t.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(t.TLSCert, t.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("temporal TLS: load client certificate %s: %w", t.TLSCert, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if t.TLSCA != "" {
		pem, err := os.ReadFile(t.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("temporal TLS: read CA %s: %w", t.TLSCA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("temporal TLS: no certificate found in %s", t.TLSCA)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// Dial connects a client. logger may be nil for the SDK's default.
func (t Temporal) Dial(logger *slog.Logger) (client.Client, error) {
	tlsCfg, err := t.tlsConfig()
	if err != nil {
		return nil, err
	}
	opts := client.Options{HostPort: t.HostPort, Namespace: t.Namespace, ConnectionOptions: client.ConnectionOptions{TLS: tlsCfg}}
	if logger != nil {
		opts.Logger = sdklog.NewStructuredLogger(logger)
	}
	c, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w", t.HostPort, t.Namespace, err)
	}
	return c, nil
}

// Storage says how to reach the primary store and its mirror, and which buckets to use.
type Storage struct {
	Primary s3.Config
	Mirror  s3.Config
	Buckets metadata.Buckets
}

// RegisterFlags adds the storage flags to fs, defaulting from S3_*, MIRROR_S3_* and BUCKET_* env vars.
// Secrets are read from the environment only, never from flags (which show up in `ps`).
func (s *Storage) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.Primary.Endpoint, "s3-endpoint", Env("S3_ENDPOINT", "127.0.0.1:9000"), "primary S3 endpoint host:port (env S3_ENDPOINT)")
	fs.BoolVar(&s.Primary.Secure, "s3-secure", EnvBool("S3_SECURE", false), "use https for the primary store (env S3_SECURE)")
	fs.StringVar(&s.Primary.Region, "s3-region", Env("S3_REGION", ""), "primary store region (env S3_REGION)")
	s.Primary.AccessKey = Env("S3_ACCESS_KEY", "edgeflow")
	s.Primary.SecretKey = Env("S3_SECRET_KEY", "edgeflow-dev-secret")

	fs.StringVar(&s.Mirror.Endpoint, "mirror-endpoint", Env("MIRROR_S3_ENDPOINT", ""), "mirror S3 endpoint host:port; empty means the primary store (env MIRROR_S3_ENDPOINT)")
	fs.BoolVar(&s.Mirror.Secure, "mirror-secure", EnvBool("MIRROR_S3_SECURE", false), "use https for the mirror (env MIRROR_S3_SECURE)")
	s.Mirror.AccessKey = Env("MIRROR_S3_ACCESS_KEY", "")
	s.Mirror.SecretKey = Env("MIRROR_S3_SECRET_KEY", "")

	d := metadata.DefaultBuckets
	fs.StringVar(&s.Buckets.Files, "bucket-files", Env("BUCKET_FILES", d.Files), "primary files bucket (env BUCKET_FILES)")
	fs.StringVar(&s.Buckets.Mirror, "bucket-mirror", Env("BUCKET_MIRROR", d.Mirror), "mirror files bucket (env BUCKET_MIRROR)")
	fs.StringVar(&s.Buckets.Meta, "bucket-meta", Env("BUCKET_META", d.Meta), "metadata bucket (env BUCKET_META)")
	fs.StringVar(&s.Buckets.MirrorMeta, "bucket-mirror-meta", Env("BUCKET_MIRROR_META", d.MirrorMeta), "copy of the metadata the edge reads, on the mirror store (env BUCKET_MIRROR_META)")
	fs.StringVar(&s.Buckets.Incoming, "bucket-incoming", Env("BUCKET_INCOMING", d.Incoming), "incoming tarballs and staging bucket (env BUCKET_INCOMING)")
}

// Open returns the primary and mirror stores (the same store when no mirror endpoint is set).
func (s Storage) Open() (primary, mirror *s3.Store, err error) {
	primary, err = s3.New(s.Primary)
	if err != nil {
		return nil, nil, err
	}
	if s.Mirror.Endpoint == "" || s.Mirror.Endpoint == s.Primary.Endpoint {
		return primary, primary, nil
	}
	m := s.Mirror
	if m.AccessKey == "" {
		m.AccessKey, m.SecretKey = s.Primary.AccessKey, s.Primary.SecretKey
	}
	mirror, err = s3.New(m)
	return primary, mirror, err
}
