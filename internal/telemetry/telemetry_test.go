package telemetry

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workflows"
)

// families gathers m's registry by name.
func families(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fs, err := m.Gatherer().Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, f := range fs {
		out[f.GetName()] = f
	}
	return out
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// recordAll records each of the runtime's metrics once, as the activities
// and a workflow do.
func recordAll(m *Metrics) {
	m.ModelCall("test/echo", 1500*time.Millisecond, 10, 3, "")
	m.ModelCall("test/echo", time.Second, 0, 0, "rate_limited")
	m.ShapingAttempt("object")
	m.RequestPrefix("test/echo", 900, 1000)
	m.RequestPrefix("test/echo", 0, 500)
	wf := m.Handler().WithTags(map[string]string{"namespace": "default", "task_queue": "q", "workflow_type": contract.WorkflowType})
	wf.WithTags(map[string]string{"outcome": workflows.TurnAnswered}).Counter(workflows.MetricTurns).Inc(1)
	wf.WithTags(map[string]string{"type": "INVALID_INPUT"}).Counter(workflows.MetricInputsRejected).Inc(1)
	wf.WithTags(map[string]string{workflows.MetricTaskTag: "a"}).Gauge(workflows.MetricApprovalsPending).Update(2)
	wf.WithTags(map[string]string{workflows.MetricTaskTag: "b"}).Gauge(workflows.MetricApprovalsPending).Update(1)
	wf.Timer("temporal_workflow_task_execution_latency").Record(20 * time.Millisecond)
	wf.Counter("temporal_request").Inc(1)
}

func TestRuntimeMetricsInPrometheusFormat(t *testing.T) {
	m, err := NewMetrics()
	require.NoError(t, err)
	recordAll(m)
	fs := families(t, m)

	calls := fs["agenttask_model_call_seconds"]
	require.NotNil(t, calls)
	require.Equal(t, dto.MetricType_HISTOGRAM, calls.GetType())
	require.Len(t, calls.GetMetric(), 1)
	require.Equal(t, map[string]string{"model": "test/echo"}, labels(calls.GetMetric()[0]))
	require.EqualValues(t, 2, calls.GetMetric()[0].GetHistogram().GetSampleCount())
	require.InDelta(t, 2.5, calls.GetMetric()[0].GetHistogram().GetSampleSum(), 1e-9)

	tokens := fs["agenttask_model_tokens_total"]
	require.NotNil(t, tokens)
	require.Equal(t, dto.MetricType_COUNTER, tokens.GetType())
	byDir := map[string]float64{}
	for _, s := range tokens.GetMetric() {
		byDir[labels(s)["direction"]] = s.GetCounter().GetValue()
	}
	require.Equal(t, map[string]float64{"in": 10, "out": 3}, byDir)

	// Prefix bytes against request bytes: 900 of 1,500 shared.
	for name, want := range map[string]float64{"agenttask_model_request_bytes_total": 1500, "agenttask_model_request_prefix_bytes_total": 900} {
		f := fs[name]
		require.NotNil(t, f, "%s in %v", name, fs)
		require.Len(t, f.GetMetric(), 1)
		require.Equal(t, want, f.GetMetric()[0].GetCounter().GetValue(), name)
	}

	// The GenAI conventions' client metrics, beside ours: one duration a
	// request (the retried one with its error.type), tokens by type.
	duration := fs["gen_ai_client_operation_duration_seconds"]
	require.NotNil(t, duration, "in %v", keys(fs))
	require.Equal(t, dto.MetricType_HISTOGRAM, duration.GetType())
	var requests uint64
	for _, s := range duration.GetMetric() {
		l := labels(s)
		require.Equal(t, "chat", l["gen_ai_operation_name"])
		require.Equal(t, "test", l["gen_ai_provider_name"])
		require.Equal(t, "echo", l["gen_ai_request_model"])
		requests += s.GetHistogram().GetSampleCount()
	}
	require.EqualValues(t, 2, requests)
	genTokens := fs["gen_ai_client_token_usage"]
	require.NotNil(t, genTokens, "in %v", keys(fs))
	byType := map[string]float64{}
	for _, s := range genTokens.GetMetric() {
		byType[labels(s)["gen_ai_token_type"]] = s.GetHistogram().GetSampleSum()
	}
	require.Equal(t, map[string]float64{"input": 10, "output": 3}, byType)

	retries := fs["agenttask_model_retries_total"]
	require.NotNil(t, retries)
	require.Equal(t, map[string]string{"model": "test/echo", "type": "rate_limited"}, labels(retries.GetMetric()[0]))
	require.NotNil(t, fs["agenttask_shaping_attempts_total"])

	turns := fs["agenttask_turns_total"]
	require.NotNil(t, turns, "a workflow counter keeps its name (one _total)")
	require.Equal(t, dto.MetricType_COUNTER, turns.GetType())
	require.Equal(t, "answered", labels(turns.GetMetric()[0])["outcome"])
	require.Equal(t, "q", labels(turns.GetMetric()[0])["task_queue"])
	require.NotNil(t, fs["agenttask_inputs_rejected_total"])

	pending := fs["agenttask_approvals_pending"]
	require.NotNil(t, pending)
	require.Len(t, pending.GetMetric(), 1, "summed over tasks")
	require.Equal(t, 3.0, pending.GetMetric()[0].GetGauge().GetValue())
	require.NotContains(t, labels(pending.GetMetric()[0]), workflows.MetricTaskTag, "the task ID is never a label")

	// The SDK's keep their temporal_ names; timers are histograms in seconds.
	require.Equal(t, dto.MetricType_HISTOGRAM, fs["temporal_workflow_task_execution_latency_seconds"].GetType())
	require.NotNil(t, fs["temporal_request_total"])
	for name := range fs {
		require.NotContains(t, name, "otel_scope", name)
	}
}

func TestApprovalsPendingFollowsEachTask(t *testing.T) {
	m, err := NewMetrics()
	require.NoError(t, err)
	wf := m.Handler().WithTags(map[string]string{"task_queue": "q"})
	gauge := func(task string) func(float64) {
		return wf.WithTags(map[string]string{workflows.MetricTaskTag: task}).Gauge(workflows.MetricApprovalsPending).Update
	}
	value := func() (float64, bool) {
		f := families(t, m)["agenttask_approvals_pending"]
		if f == nil || len(f.GetMetric()) == 0 {
			return 0, false
		}
		return f.GetMetric()[0].GetGauge().GetValue(), true
	}
	gauge("a")(2)
	gauge("b")(1)
	v, _ := value()
	require.Equal(t, 3.0, v)
	gauge("a")(1) // a decision: the task reports its new count
	v, _ = value()
	require.Equal(t, 2.0, v)
	gauge("a")(0)
	gauge("b")(0)
	_, ok := value()
	require.False(t, ok, "no series once nothing waits")
	// Without a task ID the gauge records nothing.
	wf.Gauge(workflows.MetricApprovalsPending).Update(5)
	_, ok = value()
	require.False(t, ok)
}

func TestServeAndCheckAddr(t *testing.T) {
	m, err := NewMetrics()
	require.NoError(t, err)
	recordAll(m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := m.Serve(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	body := get(t, "http://"+addr+MetricsPath)
	require.Contains(t, body, "# TYPE agenttask_model_call_seconds histogram")
	require.Contains(t, body, `agenttask_model_call_seconds_count{model="test/echo"} 2`)
	require.Contains(t, body, "go_goroutines")

	for _, ok := range []string{"", ":9090", "127.0.0.1:0", "[::1]:9090"} {
		require.NoError(t, CheckAddr(ok), ok)
	}
	for _, bad := range []string{"9090", "localhost", ":http2x", ":99999", "a b:1"} {
		require.Error(t, CheckAddr(bad), bad)
	}
}

func TestFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	s, err := FromEnv(context.Background(), env(nil), "test")
	require.NoError(t, err)
	require.Nil(t, s.Metrics, "no AGENT_METRICS_ADDR, no metrics")
	require.NotNil(t, s.Interceptor, "tracing propagates without an exporter")
	require.Nil(t, s.ActivityMetrics())
	s.Shutdown()

	s, err = FromEnv(context.Background(), env(map[string]string{EnvMetricsAddr: "127.0.0.1:0", EnvSDKDisabled: "true"}), "test")
	require.NoError(t, err)
	require.NotNil(t, s.Metrics)
	require.NotNil(t, s.ActivityMetrics())
	require.Nil(t, s.Interceptor)
	s.Shutdown()

	_, err = FromEnv(context.Background(), env(map[string]string{EnvMetricsAddr: "9090"}), "test")
	require.ErrorContains(t, err, EnvMetricsAddr)
}

// The Grafana dashboard's every query names metrics that exist: the
// runtime's (as exported) and the Temporal SDK's (its constants).
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "agenttask.json"))
	require.NoError(t, err)
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &d))
	require.NotEmpty(t, d.Panels)

	known := map[string]bool{}
	m, err := NewMetrics()
	require.NoError(t, err)
	recordAll(m)
	for name, f := range families(t, m) {
		if !strings.HasPrefix(name, "agenttask_") {
			continue
		}
		known[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_count", "_sum"} {
				known[name+s] = true
			}
		}
	}
	sdk := sdkMetricNames(t)
	require.Contains(t, sdk, "temporal_workflow_task_execution_latency")

	metricName := regexp.MustCompile(`\b(agenttask|temporal)_[a-z0-9_]+`)
	covered := map[string]bool{}
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, target := range p.Targets {
			names := metricName.FindAllString(target.Expr, -1)
			require.NotEmpty(t, names, "%s: %s", p.Title, target.Expr)
			for _, n := range names {
				covered[n] = true
				if strings.HasPrefix(n, "agenttask_") {
					require.True(t, known[n], "%s: %s is not a metric of the runtime", p.Title, n)
					continue
				}
				base := n
				for _, s := range []string{"_bucket", "_count", "_sum"} {
					base = strings.TrimSuffix(base, s)
				}
				base = strings.TrimSuffix(strings.TrimSuffix(base, "_seconds"), "_total")
				require.True(t, sdk[base], "%s: %s is not a metric of the Temporal SDK", p.Title, n)
			}
		}
	}
	for _, n := range []string{"agenttask_turns_total", "agenttask_model_call_seconds_bucket", "agenttask_model_tokens_total",
		"agenttask_model_retries_total", "agenttask_shaping_attempts_total", "agenttask_inputs_rejected_total", "agenttask_approvals_pending",
		"temporal_workflow_task_execution_latency_seconds_bucket", "temporal_activity_execution_latency_seconds_bucket"} {
		require.True(t, covered[n], "no panel shows %s", n)
	}
}

// sdkMetricNames reads the Go SDK's metric names from its source (the
// module this build uses).
func sdkMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/sdk").Output()
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "internal", "common", "metrics", "constants.go"))
	require.NoError(t, err)
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`TemporalMetricsPrefix \+ "([a-z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
		names["temporal_"+m[1]] = true
	}
	return names
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return string(b)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
