// Package config reads the settings every process shares — how to reach
// Temporal and the object stores, and the bucket names — from flags with
// defaults taken from the environment, so one binary works on a laptop and on
// a cluster without code changes.
package config

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	sdklog "go.temporal.io/sdk/log"

	"github.com/edgeflow/edgeflow/internal/metrics"
	"github.com/edgeflow/edgeflow/internal/payloadcodec"
	"github.com/edgeflow/edgeflow/internal/tracing"

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

// Temporal says how to reach the Temporal frontend. The connection comes
// from the SDK's environment configuration (go.temporal.io/sdk/contrib/envconfig):
// a profile of the TOML file TEMPORAL_CONFIG_FILE (default
// ~/.config/temporalio/temporal.toml; profile TEMPORAL_PROFILE, default
// "default"), overridden by TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH,
// TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH,
// TEMPORAL_TLS_SERVER_NAME, TEMPORAL_TLS_DISABLE_HOST_VERIFICATION,
// TEMPORAL_GRPC_META_* …, overridden in turn by the flags below, named as
// the temporal CLI names them. Without any of them: 127.0.0.1:7233,
// namespace default, no TLS.
type Temporal struct {
	HostPort   string // --address; after Dial, the address used
	Namespace  string // --namespace; after Dial, the namespace used
	Profile    string // --profile
	ConfigFile string // --config-file
	APIKey     string // --api-key
	TLS        OptionalBool
	// The TLS files and checks: --tls-cert-path, --tls-key-path,
	// --tls-ca-path, --tls-server-name, --tls-disable-host-verification.
	TLSCertPath, TLSKeyPath, TLSCAPath, TLSServerName string
	TLSDisableHostVerification                        bool
}

// Defaults when neither a profile, the environment nor a flag says.
const (
	DefaultTemporalAddress = "127.0.0.1:7233"
	DefaultNamespace       = "default"
)

// RegisterFlags adds the Temporal flags to fs, under the temporal CLI's
// names; unset, the profile and the TEMPORAL_* environment decide. The
// names of earlier releases (--temporal-address, --temporal-profile,
// --temporal-config-file) still work, hidden.
func (t *Temporal) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&t.HostPort, "address", "", "Temporal frontend host:port (default: TEMPORAL_ADDRESS, the profile, "+DefaultTemporalAddress+")")
	fs.StringVarP(&t.Namespace, "namespace", "n", "", "Temporal namespace (default: TEMPORAL_NAMESPACE, the profile, "+DefaultNamespace+")")
	fs.StringVar(&t.Profile, "profile", "", "profile of the Temporal config file (default: TEMPORAL_PROFILE, \"default\")")
	fs.StringVar(&t.ConfigFile, "config-file", "", "Temporal TOML config file (default: TEMPORAL_CONFIG_FILE, ~/.config/temporalio/temporal.toml)")
	fs.StringVar(&t.APIKey, "api-key", "", "Temporal API key; turns TLS on (prefer TEMPORAL_API_KEY or the profile: a flag shows in ps)")
	fs.AddFlag(&pflag.Flag{Name: "tls", Value: &t.TLS, NoOptDefVal: "true",
		Usage: "connect with TLS (default: TEMPORAL_TLS, the profile; on with an API key or any --tls-* file)"})
	fs.StringVar(&t.TLSCertPath, "tls-cert-path", "", "client certificate for mTLS, PEM (default: TEMPORAL_TLS_CLIENT_CERT_PATH, the profile)")
	fs.StringVar(&t.TLSKeyPath, "tls-key-path", "", "the client certificate's private key, PEM (default: TEMPORAL_TLS_CLIENT_KEY_PATH, the profile)")
	fs.StringVar(&t.TLSCAPath, "tls-ca-path", "", "CA certificates the server's certificate is checked against, PEM (default: TEMPORAL_TLS_SERVER_CA_CERT_PATH, the profile, the system's)")
	fs.StringVar(&t.TLSServerName, "tls-server-name", "", "server name the certificate must carry (default: TEMPORAL_TLS_SERVER_NAME, the profile, the address's host)")
	fs.BoolVar(&t.TLSDisableHostVerification, "tls-disable-host-verification", false, "do not check the server's certificate (tests only)")
	Alias(fs, "address", "temporal-address")
	Alias(fs, "profile", "temporal-profile")
	Alias(fs, "config-file", "temporal-config-file")
}

// applyFlags lays the flags given over the profile and the environment.
func (t *Temporal) applyFlags(p *envconfig.ClientConfigProfile) {
	if t.HostPort != "" {
		p.Address = t.HostPort
	}
	if t.Namespace != "" {
		p.Namespace = t.Namespace
	}
	if t.APIKey != "" {
		p.APIKey = t.APIKey
	}
	if !t.TLS.Given && t.TLSCertPath == "" && t.TLSKeyPath == "" && t.TLSCAPath == "" && t.TLSServerName == "" && !t.TLSDisableHostVerification {
		return
	}
	if p.TLS == nil {
		p.TLS = &envconfig.ClientConfigTLS{}
	}
	if t.TLS.Given {
		p.TLS.Disabled = !t.TLS.Value
	}
	// A path given replaces the profile's inline data, which the SDK
	// refuses next to a path.
	if t.TLSCertPath != "" {
		p.TLS.ClientCertPath, p.TLS.ClientCertData = t.TLSCertPath, nil
	}
	if t.TLSKeyPath != "" {
		p.TLS.ClientKeyPath, p.TLS.ClientKeyData = t.TLSKeyPath, nil
	}
	if t.TLSCAPath != "" {
		p.TLS.ServerCACertPath, p.TLS.ServerCACertData = t.TLSCAPath, nil
	}
	if t.TLSServerName != "" {
		p.TLS.ServerName = t.TLSServerName
	}
	if t.TLSDisableHostVerification {
		p.TLS.DisableHostVerification = true
	}
}

// retiredEnv are the connection variables of earlier versions, which are
// refused rather than silently ignored.
var retiredEnv = map[string]string{
	"TEMPORAL_TLS_CERT": "TEMPORAL_TLS_CLIENT_CERT_PATH",
	"TEMPORAL_TLS_KEY":  "TEMPORAL_TLS_CLIENT_KEY_PATH",
	"TEMPORAL_TLS_CA":   "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
}

// Options are the client options of this process: the connection (see
// Temporal), and what every client of the project shares — the logger,
// the metrics handler (metrics.SDKHandler), the tracing interceptor while
// tracing is on, and the payload codec while PAYLOAD_CODEC is on, so a
// worker, a starter and the gate always read each other's payloads.
// logger may be nil for the SDK's default.
func (t *Temporal) Options(logger *slog.Logger) (client.Options, error) {
	for old, name := range retiredEnv {
		if os.Getenv(old) != "" {
			return client.Options{}, fmt.Errorf("%s is no longer read: set %s (the SDK's environment configuration; see the configuration table in docs/operate.md)", old, name)
		}
	}
	profile, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{ConfigFilePath: t.ConfigFile,
		ConfigFileProfile: t.Profile, EnvLookup: nonEmptyEnv{}})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal connection settings: %w", err)
	}
	t.applyFlags(&profile)
	opts, err := profile.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal connection settings: %w", err)
	}
	if opts.HostPort == "" {
		opts.HostPort = DefaultTemporalAddress
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	t.HostPort, t.Namespace = opts.HostPort, opts.Namespace
	if logger != nil {
		opts.Logger = sdklog.NewStructuredLogger(logger)
	}
	return WithShared(opts)
}

// nonEmptyEnv is the environment as every setting of the project reads it:
// an empty variable is unset (TEMPORAL_ADDRESS= in a compose file keeps
// the profile's address rather than replacing it with nothing).
type nonEmptyEnv struct{}

func (nonEmptyEnv) Environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" && v != "" {
			out = append(out, kv)
		}
	}
	return out
}

func (nonEmptyEnv) LookupEnv(key string) (string, bool) {
	v := os.Getenv(key)
	return v, v != ""
}

// WithShared adds to opts what every client of the project shares (see
// Options): for clients built without Temporal's settings, as tests do.
func WithShared(opts client.Options) (client.Options, error) {
	opts.MetricsHandler = metrics.SDKHandler()
	icpts, err := tracing.ClientInterceptors()
	if err != nil {
		return client.Options{}, err
	}
	opts.Interceptors = append(opts.Interceptors, icpts...)
	codec, err := payloadcodec.FromEnv()
	if err != nil {
		return client.Options{}, err
	}
	if codec != nil {
		opts.DataConverter = codec.DataConverter()
		opts.FailureConverter = codec.FailureConverter()
	}
	return opts, nil
}

// Dial connects a client with Options. logger may be nil for the SDK's default.
func (t *Temporal) Dial(logger *slog.Logger) (client.Client, error) {
	opts, err := t.Options(logger)
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w", opts.HostPort, opts.Namespace, err)
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
// TLS has one polarity, as Migrate's --source-insecure: --s3-insecure and
// --mirror-insecure (the old --s3-secure and --mirror-secure still work, hidden).
func (s *Storage) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Primary.Endpoint, "s3-endpoint", Env("S3_ENDPOINT", "127.0.0.1:9000"), "primary S3 endpoint host:port (env S3_ENDPOINT)")
	s.Primary.Secure = EnvBool("S3_SECURE", false)
	InsecureFlag(fs, &s.Primary.Secure, "s3-insecure", "s3-secure", "plain HTTP to the primary store; =false for https (default: the opposite of env S3_SECURE)")
	fs.StringVar(&s.Primary.Region, "s3-region", Env("S3_REGION", ""), "primary store region (env S3_REGION)")
	s.Primary.AccessKey = Env("S3_ACCESS_KEY", "edgeflow")
	s.Primary.SecretKey = Env("S3_SECRET_KEY", "edgeflow-dev-secret")

	fs.StringVar(&s.Mirror.Endpoint, "mirror-endpoint", Env("MIRROR_S3_ENDPOINT", ""), "mirror S3 endpoint host:port; empty means the primary store (env MIRROR_S3_ENDPOINT)")
	s.Mirror.Secure = EnvBool("MIRROR_S3_SECURE", false)
	InsecureFlag(fs, &s.Mirror.Secure, "mirror-insecure", "mirror-secure", "plain HTTP to the mirror; =false for https (default: the opposite of env MIRROR_S3_SECURE)")
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
