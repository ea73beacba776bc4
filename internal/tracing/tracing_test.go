package tracing

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestConfigFromEnv(t *testing.T) {
	cases := []struct {
		env     map[string]string
		enabled bool
		proto   string
		bad     bool
	}{
		{env: nil},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, enabled: true, proto: "http/protobuf"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, enabled: true, proto: "grpc"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, enabled: true, proto: "http/protobuf"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_TRACES_EXPORTER": "none"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_SDK_DISABLED": "true"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, bad: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, bad: true},
	}
	for _, c := range cases {
		cfg, err := ConfigFromEnv(func(k string) string { return c.env[k] })
		if (err != nil) != c.bad || cfg.Enabled != c.enabled || (c.enabled && cfg.Protocol != c.proto) {
			t.Errorf("%v: %+v %v", c.env, cfg, err)
		}
	}
}

// An HTTP request carrying a traceparent continues that trace on the
// server, and the transport sends it.
func TestHTTPPropagation(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	Install(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	defer Uninstall()
	var seen string
	srv := httptest.NewServer(Handler("edge", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = TraceID(r.Context())
		w.WriteHeader(http.StatusTeapot)
	})))
	defer srv.Close()
	ctx, end := Start(context.Background(), "starter")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/x", nil)
	resp, err := (&http.Client{Transport: Transport(nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	end()
	if want := TraceID(ctx); want == "" || seen != want {
		t.Fatalf("server saw trace %q, the starter's is %q", seen, want)
	}
	names := map[string]bool{}
	for _, s := range rec.Ended() {
		names[s.Name()] = true
		if s.SpanContext().TraceID().String() != TraceID(ctx) {
			t.Errorf("span %s in another trace", s.Name())
		}
	}
	for _, n := range []string{"starter", "HTTP GET", "edge GET"} {
		if !names[n] {
			t.Errorf("no span %q in %v", n, names)
		}
	}
}

// Off (no OTEL_* exporter asked for), tracing installs nothing: Setup
// turns nothing on, the handler and transport are the very ones given, the
// client gets no interceptor, and a span is a no-op.
func TestOffCostsNothing(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"} {
		t.Setenv(k, "")
	}
	shutdown, err := Setup(context.Background(), "test")
	if err != nil || Enabled() {
		t.Fatalf("Setup with no exporter: enabled %v, %v", Enabled(), err)
	}
	_ = shutdown(context.Background())
	h := http.NotFoundHandler()
	if got := Handler("edge", h); fmt.Sprintf("%p", got) != fmt.Sprintf("%p", h) {
		t.Error("Handler wraps while tracing is off")
	}
	rt := &http.Transport{}
	if got := Transport(rt); got != http.RoundTripper(rt) {
		t.Error("Transport wraps while tracing is off")
	}
	if icpts, err := ClientInterceptors(); err != nil || icpts != nil {
		t.Errorf("interceptors while off: %v %v", icpts, err)
	}
	ctx, end := Start(context.Background(), "nothing")
	end()
	if TraceID(ctx) != "" {
		t.Error("a span while off")
	}
}
