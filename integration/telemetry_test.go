package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/logging"
	"github.com/agenttask/agenttask/internal/telemetry"
	"github.com/agenttask/agenttask/internal/workerkit"
)

// startTelemetryWorker runs an in-process worker whose client carries m's
// MetricsHandler and the tracing interceptor ic (either may be nil), as
// cmd/worker wires them from AGENT_METRICS_ADDR and OTEL_*, until the test
// ends.
func (h *harness) startTelemetryWorker(m *telemetry.Metrics, ic interceptor.Interceptor) {
	h.t.Helper()
	h.t.Cleanup(h.runTelemetryWorker(m, ic))
}

// runTelemetryWorker is startTelemetryWorker until stop is called.
func (h *harness) runTelemetryWorker(m *telemetry.Metrics, ic interceptor.Interceptor, more ...interceptor.Interceptor) (stop func()) {
	h.t.Helper()
	z, err := logging.New("warn", false)
	require.NoError(h.t, err)
	opts := client.Options{Logger: logging.NewSDKLogger(z)}
	if m != nil {
		opts.MetricsHandler = m.Handler()
	}
	if ic != nil {
		opts.Interceptors = []interceptor.ClientInterceptor{ic}
	}
	for _, i := range more {
		opts.Interceptors = append(opts.Interceptors, i)
	}
	wc, err := client.NewClientFromExisting(sdk, opts)
	require.NoError(h.t, err)
	cfg := h.workerConfig()
	if m != nil {
		cfg.Metrics = m
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- workerkit.Run(ctx, cfg, wc) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				h.t.Errorf("worker: %v", err)
			}
			wc.Close()
		})
	}
}

// Each model request has one span named and attributed by the GenAI
// semantic conventions ("chat echo", gen_ai.*), a child of its ModelTurn
// activity's span, and only one: the second turn runs on a new worker, which
// replays the first turn's history without a second span of its call.
func TestGenAISpansOncePerModelCallAcrossAReplay(t *testing.T) {
	h := newHarness(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracing, err := telemetry.NewTracingInterceptor(tp)
	require.NoError(t, err)
	stop := h.runTelemetryWorker(nil, tracing)

	id := "telemetry-genai"
	startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("first")})
	waitOutputs(t, id, 1)
	stop() // the next worker has nothing cached: it replays the whole history
	replayed := &replayedCalls{}
	h.t.Cleanup(h.runTelemetryWorker(nil, tracing, replayed))
	u, err := sdk.UpdateWorkflow(ctxT(t, 30*time.Second), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: contract.UpdateSend, Args: []any{text("second")}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	require.NoError(t, err)
	require.NoError(t, u.Get(ctxT(t, 30*time.Second), nil))
	waitOutputs(t, id, 2)

	byName := func(name string) []tracetest.SpanStub {
		var out []tracetest.SpanStub
		for _, s := range spans.GetSpans() {
			if s.Name == name {
				out = append(out, s)
			}
		}
		return out
	}
	eventually(t, time.Minute, "both turns' model calls traced", func() bool { return len(byName("RunActivity:ModelTurn")) == 2 })
	turns := map[trace.SpanID]bool{}
	for _, s := range byName("RunActivity:ModelTurn") {
		turns[s.SpanContext.SpanID()] = true
	}
	require.EqualValues(t, 1, replayed.n.Load(), "the second worker replayed the first turn's model call")
	chats := byName("chat echo")
	require.Len(t, chats, 2, "one span a model request, none again on replay")
	for _, s := range chats {
		require.True(t, turns[s.Parent.SpanID()], "a child of its ModelTurn's span")
		require.Equal(t, trace.SpanKindClient, s.SpanKind)
		at := map[string]attribute.Value{}
		for _, kv := range s.Attributes {
			at[string(kv.Key)] = kv.Value
		}
		require.Equal(t, "chat", at["gen_ai.operation.name"].AsString())
		require.Equal(t, "test", at["gen_ai.provider.name"].AsString())
		require.Equal(t, "echo", at["gen_ai.request.model"].AsString())
		require.Equal(t, []string{"stop"}, at["gen_ai.response.finish_reasons"].AsStringSlice())
		require.Positive(t, at["gen_ai.usage.input_tokens"].AsInt64(), "the usage the test model reported")
		require.Positive(t, at["gen_ai.usage.output_tokens"].AsInt64())
	}
}

// A send update made by a traced client and the ModelTurn activity of the
// turn that answers it are in one trace: the update's span is the parent of
// the turn's model call (telemetry.TurnTraces), across the worker.
func TestTelemetryTraceSendToModelTurn(t *testing.T) {
	h := newHarness(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	workerTracing, err := telemetry.NewTracingInterceptor(tp)
	require.NoError(t, err)
	h.startTelemetryWorker(nil, workerTracing)

	id := "telemetry-trace"
	startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("first")}) // untraced start
	waitOutputs(t, id, 1)

	callerTracing, err := telemetry.NewTracingInterceptor(tp)
	require.NoError(t, err)
	caller, err := client.NewClientFromExisting(sdk, client.Options{Logger: quietLogger(), Interceptors: []interceptor.ClientInterceptor{callerTracing}})
	require.NoError(t, err)
	defer caller.Close()
	u, err := caller.UpdateWorkflow(ctxT(t, 10*time.Second), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: contract.UpdateSend, Args: []any{text("second")}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	require.NoError(t, err)
	require.NoError(t, u.Get(ctxT(t, 10*time.Second), nil))
	waitOutputs(t, id, 2)

	find := func(name string) []tracetest.SpanStub {
		var out []tracetest.SpanStub
		for _, s := range spans.GetSpans() {
			if s.Name == name {
				out = append(out, s)
			}
		}
		return out
	}
	sent := find("UpdateWorkflow:" + contract.UpdateSend)
	require.Len(t, sent, 1, "the caller's update span")
	trace := sent[0].SpanContext.TraceID()
	var handled, started, ran bool
	eventually(t, time.Minute, "the update's handler, the ModelTurn it led to and its run, in the update's trace", func() bool {
		handled, started, ran = false, false, false
		for _, s := range spans.GetSpans() {
			if s.SpanContext.TraceID() != trace {
				continue
			}
			switch s.Name {
			case "HandleUpdate:" + contract.UpdateSend:
				handled = true
			case "StartActivity:ModelTurn":
				started = true
			case "RunActivity:ModelTurn":
				ran = true
			}
		}
		return handled && started && ran
	})
	// The first turn, answering the untraced start, is in another trace.
	var turns int
	for _, s := range find("RunActivity:ModelTurn") {
		if s.SpanContext.TraceID() != trace {
			turns++
		}
	}
	require.Equal(t, 1, turns, "the first turn's model call, in the workflow's own trace")

	// ask: its handler returns once its turn answered; the turn is in its trace too.
	ua, err := caller.UpdateWorkflow(ctxT(t, 30*time.Second), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: contract.UpdateAsk, Args: []any{text("third")}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	require.NoError(t, err)
	require.NoError(t, ua.Get(ctxT(t, 30*time.Second), nil))
	asked := find("UpdateWorkflow:" + contract.UpdateAsk)
	require.Len(t, asked, 1)
	eventually(t, time.Minute, "the ask's ModelTurn in its trace", func() bool {
		for _, s := range find("RunActivity:ModelTurn") {
			if s.SpanContext.TraceID() == asked[0].SpanContext.TraceID() {
				return true
			}
		}
		return false
	})
}

// /metrics of a worker shows the SDK's metrics and the runtime's, and the
// runtime's move with a turn: turns answered, model call latency count,
// tokens.
func TestMetricsMoveWithATurn(t *testing.T) {
	h := newHarness(t)
	m, err := telemetry.NewMetrics()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	addr, err := m.Serve(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + addr + telemetry.MetricsPath
	h.startTelemetryWorker(m, nil)

	id := "telemetry-metrics"
	startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("first")})
	waitOutputs(t, id, 1)
	before := scrape(t, url)

	_, err = sendUpdate(t, id, text("second"))
	require.NoError(t, err)
	waitOutputs(t, id, 2)
	var after map[string]float64
	eventually(t, time.Minute, "the second turn's metrics", func() bool {
		after = scrape(t, url)
		return after[`agenttask_model_call_seconds_count{model="test/echo"}`] >= before[`agenttask_model_call_seconds_count{model="test/echo"}`]+1
	})
	require.Equal(t, before[`agenttask_model_call_seconds_count{model="test/echo"}`]+1, after[`agenttask_model_call_seconds_count{model="test/echo"}`])
	require.Greater(t, after[`agenttask_model_tokens_total{direction="in",model="test/echo"}`], before[`agenttask_model_tokens_total{direction="in",model="test/echo"}`])
	require.Greater(t, sumOf(after, "temporal_workflow_task_execution_latency_seconds_count"), 0.0, "the SDK's metrics")
	require.Greater(t, sumOf(after, "temporal_activity_execution_latency_seconds_count"), 0.0, "the SDK's metrics")

	turns := func(s map[string]float64) float64 {
		return sumOf(s, "agenttask_turns_total", `outcome="answered"`, fmt.Sprintf("task_queue=%q", h.queue), `workflow_type="AgentTask"`)
	}
	require.Equal(t, 1.0, turns(before), "the first turn")
	require.Equal(t, 2.0, turns(after), "the first and the second turn")

	// A refused input is counted by its type.
	_, err = sendUpdate(t, id, map[string]any{"message": "not a list of parts"})
	require.Error(t, err)
	typ := errType(err)
	require.NotEmpty(t, typ)
	rejected := func(s map[string]float64) float64 {
		return sumOf(s, "agenttask_inputs_rejected_total", fmt.Sprintf("type=%q", typ), fmt.Sprintf("task_queue=%q", h.queue))
	}
	eventually(t, time.Minute, "the refused input counted", func() bool { return rejected(scrape(t, url)) == rejected(after)+1 })
}

// scrape reads url's samples by their series (name and sorted labels, as
// the Prometheus text format writes them).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	require.NoError(t, sc.Err())
	return out
}

// sumOf adds up the series of one metric that carry every label given
// (name="value").
func sumOf(samples map[string]float64, name string, labels ...string) float64 {
	var n float64
next:
	for k, v := range samples {
		if k != name && !strings.HasPrefix(k, name+"{") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(k, "{"+l+",") && !strings.Contains(k, ","+l+",") && !strings.Contains(k, ","+l+"}") && !strings.Contains(k, "{"+l+"}") {
				continue next
			}
		}
		n += v
	}
	return n
}

// The worker binary serves /metrics on AGENT_METRICS_ADDR, and on SIGTERM
// lets a running model call finish (AGENT_WORKER_STOP_TIMEOUT): its answer
// is recorded and the model is not asked again by the next worker.
func TestMetricsWorkerProcessAndGracefulStop(t *testing.T) {
	h := newHarness(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cmd := exec.Command(workerBinary(t))
	cmd.Env = append(h.workerEnv(), telemetry.EnvMetricsAddr+"="+addr, workerkit.EnvStopTimeout+"=30s")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	id := "telemetry-process"
	startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("first")})
	waitOutputs(t, id, 1)
	url := "http://" + addr + telemetry.MetricsPath
	samples := scrape(t, url)
	require.Equal(t, 1.0, samples[`agenttask_model_call_seconds_count{model="test/echo"}`])
	require.Greater(t, sumOf(samples, "temporal_workflow_task_execution_latency_seconds_count"), 0.0)

	h.model.Hold()
	_, err = sendUpdate(t, id, text("second"))
	require.NoError(t, err)
	require.NoError(t, h.model.WaitForCalls(ctxT(t, time.Minute), 2))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select { // stopping, the model call still running: the worker waits for it
	case err := <-done:
		t.Fatalf("the worker exited (%v) while its model call was still running", err)
	case <-time.After(time.Second):
	}
	h.model.Release()
	select {
	case err := <-done:
		require.NoError(t, err, "a clean exit once the call finished")
	case <-time.After(time.Minute):
		t.Fatal("the worker did not stop after its model call finished")
	}

	h.startWorker()
	waitOutputs(t, id, 2)
	require.Equal(t, 2, h.model.CallCount(), "the call that ran during the stop was not made again")
}

// replayedCalls counts the ModelTurn activities a worker's workflows
// schedule while replaying: each is a model call made before, which the
// replay must not trace again.
type replayedCalls struct {
	interceptor.InterceptorBase
	n atomic.Int32
}

func (r *replayedCalls) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &replayedInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, r: r}
}

type replayedInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	r *replayedCalls
}

func (i *replayedInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&replayedOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, r: i.r})
}

type replayedOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	r *replayedCalls
}

func (o *replayedOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	if activityType == "ModelTurn" && workflow.IsReplaying(ctx) {
		o.r.n.Add(1)
	}
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}
