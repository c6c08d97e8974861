// Package telemetry gives the worker and the Tasks API their metrics and
// traces: the Temporal SDK's metrics and the runtime's own (agenttask_*), in
// Prometheus format on AGENT_METRICS_ADDR, and OpenTelemetry traces through
// Temporal's tracing interceptor, exported over OTLP when
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set.
//
// Metrics go through one OpenTelemetry MeterProvider read by the
// OpenTelemetry Prometheus exporter: the SDK's through
// go.temporal.io/sdk/contrib/opentelemetry's MetricsHandler (their names keep
// the SDK's temporal_ prefix; timers become *_seconds histograms), the
// workflow's through the same handler (workflow.GetMetricsHandler, which the
// SDK silences during replay), the activities' through the instruments of
// Metrics (activities.Metrics).
package telemetry

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	sdkotel "go.temporal.io/sdk/contrib/opentelemetry"

	"github.com/agenttask/agenttask/internal/connect"
	"github.com/agenttask/agenttask/internal/workflows"
)

// EnvMetricsAddr is where /metrics is served (host:port, such as :9090);
// unset, nowhere.
const EnvMetricsAddr = "AGENT_METRICS_ADDR"

// MetricsPath is the path of the Prometheus endpoint.
const MetricsPath = "/metrics"

// Names of the runtime's metrics recorded by activities (the workflow's are
// in workflows/metrics.go).
const (
	MetricModelCallSeconds = "agenttask_model_call_seconds"
	// MetricRequestBytes counts the bytes of model requests sent, and
	// MetricRequestPrefixBytes those of them each request shared, from its
	// start, with its task's previous request (activities/prefix.go): their
	// ratio is how much of the input a provider's prompt cache can serve.
	MetricRequestBytes       = "agenttask_model_request_bytes"
	MetricRequestPrefixBytes = "agenttask_model_request_prefix_bytes"
	MetricModelTokens        = "agenttask_model_tokens_total"
	MetricModelRetries       = "agenttask_model_retries_total"
	MetricShapingAttempts    = "agenttask_shaping_attempts_total"
	// The OpenTelemetry GenAI semantic conventions' client metrics
	// (gen_ai.client.operation.duration, gen_ai.client.token.usage), for
	// standard GenAI dashboards, named as Prometheus names them: dots as
	// underscores, in metric and label names alike (whatever UTF-8 names
	// a scraper negotiates), the duration with its _seconds suffix.
	MetricGenAIDuration = "gen_ai_client_operation_duration"
	MetricGenAITokens   = "gen_ai_client_token_usage"
)

// LatencyBuckets are the histograms' bucket bounds, in seconds: from a
// workflow task (milliseconds) to a long model answer (minutes).
var LatencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}

// Metrics is one process's metrics: a Prometheus registry fed by an
// OpenTelemetry MeterProvider. Its methods record the activities' metrics
// (it implements activities.Metrics); Handler is the Temporal client's
// MetricsHandler.
type Metrics struct {
	registry *prometheus.Registry
	provider *sdkmetric.MeterProvider
	handler  client.MetricsHandler

	modelCall metric.Float64Histogram
	tokens    metric.Int64Counter
	retries   metric.Int64Counter
	shaping   metric.Int64Counter
	reqBytes  metric.Int64Counter
	preBytes  metric.Int64Counter

	// The GenAI semantic conventions' client metrics, beside our own.
	genAIDuration metric.Float64Histogram
	genAITokens   metric.Int64Histogram

	pending pendingApprovals
}

// NewMetrics makes a registry with the Go runtime's and the process's
// collectors, the SDK's handler and the runtime's instruments.
func NewMetrics() (*Metrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: the Prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithView(sdkmetric.NewView(
		sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: LatencyBuckets}},
	)))
	m := &Metrics{registry: reg, provider: provider}
	m.pending.byTask = map[string]pendingEntry{}
	sdkMeter := provider.Meter("temporal-sdk-go")
	m.handler = &handler{
		MetricsHandler: sdkotel.NewMetricsHandler(sdkotel.MetricsHandlerOptions{
			Meter:                sdkMeter,
			UseMonotonicCounters: true, // Prometheus counters, not gauges
			OnError:              func(error) {},
		}),
		pending: &m.pending,
	}
	meter := provider.Meter("agenttask")
	if m.modelCall, err = meter.Float64Histogram(MetricModelCallSeconds, metric.WithUnit("s"),
		metric.WithDescription("Latency of one model request (an HTTP call to the provider), by model")); err != nil {
		return nil, err
	}
	if m.genAIDuration, err = meter.Float64Histogram(MetricGenAIDuration, metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration (OpenTelemetry GenAI semantic conventions)"),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)); err != nil {
		return nil, err
	}
	if m.genAITokens, err = meter.Int64Histogram(MetricGenAITokens, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens used by a GenAI operation, by gen_ai.token.type (OpenTelemetry GenAI semantic conventions)"),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)); err != nil {
		return nil, err
	}
	if m.tokens, err = meter.Int64Counter(MetricModelTokens,
		metric.WithDescription("Tokens the provider reported, by model and direction (in, out)")); err != nil {
		return nil, err
	}
	if m.retries, err = meter.Int64Counter(MetricModelRetries,
		metric.WithDescription("Model requests that failed and are tried again, by model and type")); err != nil {
		return nil, err
	}
	if m.shaping, err = meter.Int64Counter(MetricShapingAttempts,
		metric.WithDescription("Shaping attempts, by outcome (object, not_json, error)")); err != nil {
		return nil, err
	}
	if m.reqBytes, err = meter.Int64Counter(MetricRequestBytes, metric.WithUnit("By"),
		metric.WithDescription("Bytes of model requests sent, by model")); err != nil {
		return nil, err
	}
	if m.preBytes, err = meter.Int64Counter(MetricRequestPrefixBytes, metric.WithUnit("By"),
		metric.WithDescription("Bytes of model requests that repeat, from the start, the task's previous request (what a prompt cache can serve), by model")); err != nil {
		return nil, err
	}
	if _, err = sdkMeter.Float64ObservableGauge(workflows.MetricApprovalsPending,
		metric.WithDescription("Capability calls waiting for a person's decision, in the tasks this worker ran last"),
		metric.WithFloat64Callback(m.pending.observe)); err != nil {
		return nil, err
	}
	return m, nil
}

// Handler is the Temporal client's MetricsHandler (client.Options.MetricsHandler).
func (m *Metrics) Handler() client.MetricsHandler { return m.handler }

// HTTPHandler serves the registry in Prometheus's text format.
func (m *Metrics) HTTPHandler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Gatherer is the registry (tests read it directly).
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.registry }

// Serve serves MetricsPath on addr until ctx is done, and returns the
// address it listens on (addr may name port 0).
func (m *Metrics) Serve(ctx context.Context, addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("metrics: listening on %s (%s): %w", addr, EnvMetricsAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle(MetricsPath, m.HTTPHandler())
	connect.ServeUntilDone(ctx, ln, mux)
	return ln.Addr().String(), nil
}

// Shutdown stops the MeterProvider.
func (m *Metrics) Shutdown(ctx context.Context) error { return m.provider.Shutdown(ctx) }

// ModelCall records one model request: its latency, its tokens when it
// succeeded, a retry when it failed and will be tried again (retryType
// non-empty).
func (m *Metrics) ModelCall(model string, took time.Duration, in, out int64, retryType string) {
	if m == nil {
		return
	}
	ctx := context.Background()
	byModel := metric.WithAttributes(attribute.String("model", model))
	m.modelCall.Record(ctx, took.Seconds(), byModel)
	if in > 0 {
		m.tokens.Add(ctx, in, metric.WithAttributes(attribute.String("model", model), attribute.String("direction", "in")))
	}
	if out > 0 {
		m.tokens.Add(ctx, out, metric.WithAttributes(attribute.String("model", model), attribute.String("direction", "out")))
	}
	if retryType != "" {
		m.retries.Add(ctx, 1, metric.WithAttributes(attribute.String("model", model), attribute.String("type", retryType)))
	}
	m.genAICall(ctx, model, took, in, out, retryType)
}

// genAICall records a model request in the GenAI conventions' metrics:
// its duration (with error_type when it failed and is retried) and, when
// it answered, its input and output tokens.
func (m *Metrics) genAICall(ctx context.Context, model string, took time.Duration, in, out int64, retryType string) {
	provider, name, _ := strings.Cut(model, "/")
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai_operation_name", "chat"),
		attribute.String("gen_ai_provider_name", provider),
		attribute.String("gen_ai_request_model", name),
	}
	duration := attrs
	if retryType != "" {
		duration = append(slices.Clone(attrs), attribute.String("error_type", retryType))
	}
	m.genAIDuration.Record(ctx, took.Seconds(), metric.WithAttributes(duration...))
	if in > 0 {
		m.genAITokens.Record(ctx, in, metric.WithAttributes(append(slices.Clone(attrs), attribute.String("gen_ai_token_type", "input"))...))
	}
	if out > 0 {
		m.genAITokens.Record(ctx, out, metric.WithAttributes(append(slices.Clone(attrs), attribute.String("gen_ai_token_type", "output"))...))
	}
}

// RequestPrefix records a request's size and the prefix it shared with its
// task's previous request.
func (m *Metrics) RequestPrefix(model string, shared, total int64) {
	if m == nil {
		return
	}
	byModel := metric.WithAttributes(attribute.String("model", model))
	m.reqBytes.Add(context.Background(), total, byModel)
	m.preBytes.Add(context.Background(), shared, byModel)
}

// ShapingAttempt records one attempt of the shaping pass.
func (m *Metrics) ShapingAttempt(outcome string) {
	if m == nil {
		return
	}
	m.shaping.Add(context.Background(), 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

// handler is the SDK's handler, but for the workflows' approvals gauge:
// each task reports its own count tagged with its ID, and the gauge
// exported is their sum (per namespace, task queue and workflow type), so
// the task ID never becomes a label.
type handler struct {
	client.MetricsHandler
	tags    map[string]string
	pending *pendingApprovals
}

func (h *handler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	for k, v := range h.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	inner := h.MetricsHandler
	if _, ok := tags[workflows.MetricTaskTag]; !ok {
		inner = inner.WithTags(tags)
	}
	return &handler{MetricsHandler: inner, tags: merged, pending: h.pending}
}

func (h *handler) Gauge(name string) client.MetricsGauge {
	if name == workflows.MetricApprovalsPending {
		id := h.tags[workflows.MetricTaskTag]
		if id == "" {
			return client.MetricsNopHandler.Gauge(name)
		}
		var attrs []attribute.KeyValue
		for k, v := range h.tags {
			if k != workflows.MetricTaskTag {
				attrs = append(attrs, attribute.String(k, v))
			}
		}
		set := attribute.NewSet(attrs...)
		return gaugeFunc(func(v float64) { h.pending.set(id, set, v) })
	}
	return h.MetricsHandler.Gauge(name)
}

// Unwrap lets sdkotel.ExtractMetricsHandler find the SDK's handler.
func (h *handler) Unwrap() client.MetricsHandler { return h.MetricsHandler }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

// pendingApprovals holds each task's last reported count. A task that
// moves to another worker (after this one stopped, or evicted it from its
// cache) stays counted here with its last value until it reports again.
type pendingApprovals struct {
	mu     sync.Mutex
	byTask map[string]pendingEntry
}

type pendingEntry struct {
	attrs attribute.Set
	n     float64
}

func (p *pendingApprovals) set(task string, attrs attribute.Set, n float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n <= 0 {
		delete(p.byTask, task)
		return
	}
	p.byTask[task] = pendingEntry{attrs: attrs, n: n}
}

func (p *pendingApprovals) observe(_ context.Context, o metric.Float64Observer) error {
	p.mu.Lock()
	sums := map[attribute.Distinct]*pendingEntry{}
	var keys []attribute.Distinct
	for _, e := range p.byTask {
		k := e.attrs.Equivalent()
		if s, ok := sums[k]; ok {
			s.n += e.n
			continue
		}
		sums[k] = &pendingEntry{attrs: e.attrs, n: e.n}
		keys = append(keys, k)
	}
	p.mu.Unlock()
	sort.Slice(keys, func(i, j int) bool {
		return sums[keys[i]].attrs.Encoded(attribute.DefaultEncoder()) < sums[keys[j]].attrs.Encoded(attribute.DefaultEncoder())
	})
	for _, k := range keys {
		o.Observe(sums[k].n, metric.WithAttributeSet(sums[k].attrs))
	}
	return nil
}

// CheckAddr checks an AGENT_METRICS_ADDR value: host:port, the host
// optional.
func CheckAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" || strings.ContainsAny(host, "/ ") {
		return fmt.Errorf("%s=%q: want host:port or :port (such as :9090)", EnvMetricsAddr, addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%s=%q: the port is not a number from 0 to 65535", EnvMetricsAddr, addr)
	}
	return nil
}
