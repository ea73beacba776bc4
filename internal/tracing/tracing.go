// Package tracing joins a job's processes into one OpenTelemetry trace: a
// starter's span, the workflows, children and activities it causes (through
// the Temporal SDK's tracing interceptor, which carries the context in
// Temporal headers) and the HTTP requests of the edge and the gate (W3C
// traceparent and baggage, the standard propagators).
//
// Tracing is configured by the standard OTEL_* variables and is on only when
// an exporter is asked for: OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or OTEL_TRACES_EXPORTER=otlp.
// OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true turn it off. The
// protocol is OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL, grpc or http/protobuf
// (the default); OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the
// process, OTEL_TRACES_SAMPLER(_ARG) sample, OTEL_BSP_* batch, and the
// exporters read their own OTEL_EXPORTER_OTLP_* (headers, timeout,
// certificates). Off, nothing is installed: no interceptor, no HTTP
// wrapper, so it costs nothing.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// InstrumentationName names our tracer.
const InstrumentationName = "github.com/edgeflow/edgeflow"

// provider is the installed tracer provider; nil while tracing is off.
var provider atomic.Pointer[trace.TracerProvider]

// Propagator is the standard one: W3C trace context and baggage.
var Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Config is what the OTEL_* variables ask for.
type Config struct {
	Enabled  bool
	Protocol string // grpc or http/protobuf
}

// ConfigFromEnv reads the OTEL_* variables that decide whether and how.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return Config{}, nil
	}
	exporter := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")))
	switch exporter {
	case "none":
		return Config{}, nil
	case "", "otlp":
	default:
		return Config{}, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: this build exports otlp or none", exporter)
	}
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") + getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	if exporter == "" && endpoint == "" {
		return Config{}, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "":
		protocol = "http/protobuf"
	case "grpc", "http/protobuf":
	default:
		return Config{}, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want grpc or http/protobuf", protocol)
	}
	return Config{Enabled: true, Protocol: protocol}, nil
}

// Setup turns tracing on for this process when the environment asks for it
// (see the package comment), naming the process service unless
// OTEL_SERVICE_NAME does. shutdown flushes the spans still buffered; call
// it before exiting. With tracing off both are no-ops.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	cfg, err := ConfigFromEnv(os.Getenv)
	if err != nil || !cfg.Enabled {
		return func(context.Context) error { return nil }, err
	}
	var exp sdktrace.SpanExporter
	if cfg.Protocol == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// Later sources win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the default service name.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithProcessPID(),
		resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	Install(tp)
	return tp.Shutdown, nil
}

// Install turns tracing on with tp (Setup's provider, or a test's span
// recorder) and makes it and Propagator OpenTelemetry's globals.
func Install(tp trace.TracerProvider) {
	provider.Store(&tp)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator)
}

// Uninstall turns tracing off again (tests).
func Uninstall() { provider.Store(nil) }

// Enabled reports whether this process traces.
func Enabled() bool { return provider.Load() != nil }

// Tracer is our tracer; a no-op one while tracing is off.
func Tracer() trace.Tracer {
	if p := provider.Load(); p != nil {
		return (*p).Tracer(InstrumentationName)
	}
	return noop.NewTracerProvider().Tracer(InstrumentationName)
}

// ClientInterceptors are the Temporal client's interceptors: the SDK's
// tracing interceptor while tracing is on, none otherwise. Workers made
// from the client inherit them, so workflows, children, activities,
// signals, updates and queries all carry the trace.
func ClientInterceptors() ([]interceptor.ClientInterceptor, error) {
	p := provider.Load()
	if p == nil {
		return nil, nil
	}
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer: (*p).Tracer("go.temporal.io/sdk"), TextMapPropagator: Propagator,
	})
	if err != nil {
		return nil, err
	}
	return []interceptor.ClientInterceptor{i}, nil
}

// Start begins a span (a starter's root span, say); end ends it.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func()) {
	if !Enabled() {
		return ctx, func() {}
	}
	ctx, span := Tracer().Start(ctx, name, trace.WithAttributes(attrs...))
	return ctx, func() { span.End() }
}

// TraceID is the trace of ctx in hex, "" when none (for logs and output).
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// Handler traces the requests h serves as server spans named after
// server, continuing the caller's trace from its traceparent header. Off,
// it returns h itself.
func Handler(server string, h http.Handler) http.Handler {
	if !Enabled() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := Tracer().Start(ctx, server+" "+r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path),
				attribute.String("server.name", server)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.code))
		if sw.code >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.code))
		}
	})
}

// Transport injects the trace of each request's context into its headers
// and records a client span, so the server it calls joins the trace. Off,
// it returns rt itself (http.DefaultTransport for nil).
func Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	if !Enabled() {
		return rt
	}
	return roundTripper{rt}
}

type roundTripper struct{ next http.RoundTripper }

func (t roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, span := Tracer().Start(r.Context(), "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.full", r.URL.Redacted())))
	defer span.End()
	r = r.Clone(ctx)
	Propagator.Inject(ctx, propagation.HeaderCarrier(r.Header))
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	return resp, nil
}

// statusWriter remembers the status code; Unwrap keeps
// http.ResponseController (deadlines, flushing) working through it.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
