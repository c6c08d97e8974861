package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	sdkotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// The standard OpenTelemetry variables this package reads.
const (
	EnvOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSDKDisabled        = "OTEL_SDK_DISABLED"
)

// spanKey is where Temporal's tracing interceptor keeps a workflow's current
// span; TurnTraces reads and sets it.
type spanKey struct{}

// SpanContextKey is the interceptor's SpanContextKey (TracerOptions).
var SpanContextKey any = spanKey{}

// NewTracerProvider is the process's tracer provider: spans go to the OTLP
// endpoint (gRPC, configured by the standard OTEL_EXPORTER_OTLP_* variables)
// when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set; otherwise nowhere (trace context still travels in Temporal headers,
// so another process's spans join the caller's trace). service names the
// process unless OTEL_SERVICE_NAME does. nil when OTEL_SDK_DISABLED=true.
func NewTracerProvider(ctx context.Context, getenv func(string) string, service string) (*sdktrace.TracerProvider, error) {
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return nil, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if getenv(EnvOTLPEndpoint) != "" || getenv(EnvOTLPTracesEndpoint) != "" {
		exp, err := otlptracegrpc.New(ctx) // reads OTEL_EXPORTER_OTLP_* itself
		if err != nil {
			return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

// NewTracingInterceptor is Temporal's OpenTelemetry tracing interceptor on
// tp, for client.Options.Interceptors: it traces the client's calls (start,
// signal, update, query) and, on a worker made from that client, workflows,
// handlers and activities, carrying the trace in Temporal headers.
func NewTracingInterceptor(tp trace.TracerProvider) (interceptor.Interceptor, error) {
	return sdkotel.NewTracingInterceptor(sdkotel.TracerOptions{
		Tracer:         tp.Tracer("agenttask"),
		SpanContextKey: SpanContextKey,
	})
}

// TurnTraces is a worker interceptor that puts a task's model calls in the
// trace of the input they answer. An input arrives in a handler (the send
// or ask update, the input signal), whose span the tracing interceptor sets
// on the handler's context; the turn runs in the workflow's main loop, whose
// span is the task's start. TurnTraces remembers the span of the last input
// taken in (its handler run; the validator has accepted it) and makes it the
// parent of the next ModelTurn and Shape activities. It must come after the tracing interceptor in the worker's
// interceptors (client interceptors come first), and does nothing without
// it. It records nothing in history.
func TurnTraces() interceptor.WorkerInterceptor { return &turnTraces{} }

type turnTraces struct {
	interceptor.WorkerInterceptorBase
}

func (*turnTraces) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &turnInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

type turnInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	last any // the span of the last input accepted
}

func (i *turnInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&turnOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, in: i})
}

func (i *turnInbound) HandleSignal(ctx workflow.Context, in *interceptor.HandleSignalInput) error {
	if in.SignalName == contract.SignalInput {
		i.remember(ctx)
	}
	return i.Next.HandleSignal(ctx, in)
}

func (i *turnInbound) ExecuteUpdate(ctx workflow.Context, in *interceptor.UpdateInput) (any, error) {
	// Before the handler: ask's handler returns only once its turn answered.
	if in.Name == contract.UpdateSend || in.Name == contract.UpdateAsk {
		i.remember(ctx)
	}
	return i.Next.ExecuteUpdate(ctx, in)
}

func (i *turnInbound) remember(ctx workflow.Context) {
	if span := ctx.Value(SpanContextKey); span != nil {
		i.last = span
	}
}

type turnOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	in *turnInbound
}

func (o *turnOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	if o.in.last != nil && (activityType == activities.ModelTurnName || activityType == activities.ShapeName) {
		ctx = workflow.WithValue(ctx, SpanContextKey, o.in.last)
	}
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}
