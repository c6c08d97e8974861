package telemetry

import (
	"context"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"

	"github.com/agenttask/agenttask/internal/activities"
)

// Setup is one process's telemetry, from its environment: metrics when
// AGENT_METRICS_ADDR is set, tracing unless OTEL_SDK_DISABLED=true.
type Setup struct {
	Addr        string   // AGENT_METRICS_ADDR; "" serves no metrics
	Metrics     *Metrics // nil without Addr
	Tracer      *sdktrace.TracerProvider
	Interceptor interceptor.Interceptor // nil without Tracer
}

// FromEnv reads AGENT_METRICS_ADDR and the OpenTelemetry variables; service
// names the process in traces (agenttask-worker, agenttask-api).
func FromEnv(ctx context.Context, getenv func(string) string, service string) (*Setup, error) {
	s := &Setup{Addr: strings.TrimSpace(getenv(EnvMetricsAddr))}
	if err := CheckAddr(s.Addr); err != nil {
		return nil, err
	}
	var err error
	if s.Addr != "" {
		if s.Metrics, err = NewMetrics(); err != nil {
			return nil, err
		}
	}
	if s.Tracer, err = NewTracerProvider(ctx, getenv, service); err != nil {
		return nil, err
	}
	if s.Tracer != nil {
		if s.Interceptor, err = NewTracingInterceptor(s.Tracer); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Apply sets the client options' MetricsHandler and tracing interceptor
// (a worker made from the client uses both).
func (s *Setup) Apply(o *client.Options) {
	if s.Metrics != nil {
		o.MetricsHandler = s.Metrics.Handler()
	}
	if s.Interceptor != nil {
		o.Interceptors = append(o.Interceptors, s.Interceptor)
	}
}

// ActivityMetrics is what the worker's activities record into (nil: none).
func (s *Setup) ActivityMetrics() activities.Metrics {
	if s.Metrics == nil {
		return nil
	}
	return s.Metrics
}

// Serve serves /metrics on Addr until ctx is done; it returns the address
// listened on ("" when Addr is unset).
func (s *Setup) Serve(ctx context.Context) (string, error) {
	if s.Metrics == nil {
		return "", nil
	}
	return s.Metrics.Serve(ctx, s.Addr)
}

// Shutdown flushes the spans not yet exported (within 5 s).
func (s *Setup) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.Tracer != nil {
		_ = s.Tracer.Shutdown(ctx)
	}
	if s.Metrics != nil {
		_ = s.Metrics.Shutdown(ctx)
	}
}
