package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/transcript"
	"github.com/agenttask/agenttask/internal/workerkit"
	"github.com/agenttask/agenttask/internal/workflows"
)

// With -instrument the AgentTask worker is assembled here instead of by
// workerkit.Run, the same way (same store, adapter, router, registration
// names), with the activity's dependencies wrapped in timers: it shows
// where the model activity's time goes (transcript writes and reads, the
// HTTP model call) without touching the product's code.

// activityTimings collects durations by part name.
type activityTimings struct {
	mu       sync.Mutex
	order    []string
	by       map[string][]time.Duration
	reqBytes []int64 // model request bodies
}

func (t *activityTimings) addSize(n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reqBytes = append(t.reqBytes, n)
}

func newActivityTimings() *activityTimings { return &activityTimings{by: map[string][]time.Duration{}} }

func (t *activityTimings) add(name string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.by[name]; !ok {
		t.order = append(t.order, name)
	}
	t.by[name] = append(t.by[name], d)
}

func (t *activityTimings) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.order, t.by, t.reqBytes = nil, map[string][]time.Duration{}, nil
}

func (t *activityTimings) since(name string, start time.Time) { t.add(name, time.Since(start)) }

// runInstrumentedWorker is workerkit.Run with timers.
func runInstrumentedWorker(ctx context.Context, cfg workerkit.Config, c client.Client, t *activityTimings) error {
	store, err := transcript.Open(ctx, cfg.TranscriptURL)
	if err != nil {
		return fmt.Errorf("opening the transcript store %s: %w", cfg.TranscriptURL, err)
	}
	defer store.Close()
	tr := workerkit.TranscriptAdapter{Store: store}
	models := cfg.Models
	models.HTTPClient = &http.Client{Transport: timedTransport{llm.NewHTTPClient().Transport, t}}
	acts := &activities.Activities{
		Models:     timedModels{llm.NewRouter(models), t},
		Transcript: timedTranscript{tr, t},
	}
	w := sdkworker.New(c, cfg.TaskQueue, sdkworker.Options{})
	wf := &workflows.Workflows{Transcript: tr}
	w.RegisterWorkflowWithOptions(wf.AgentTask, workflow.RegisterOptions{Name: contract.WorkflowType})
	w.RegisterActivityWithOptions(func(ctx context.Context, in activities.ModelTurnInput) (*activities.ModelTurnResult, error) {
		defer t.since("ModelTurn (whole activity function)", time.Now())
		return acts.ModelTurn(ctx, in)
	}, activity.RegisterOptions{Name: activities.ModelTurnName})
	w.RegisterActivityWithOptions(acts.WriteEntries, activity.RegisterOptions{Name: activities.WriteEntriesName})
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the worker on %q: %w", cfg.TaskQueue, err)
	}
	<-ctx.Done()
	w.Stop()
	return nil
}

type timedModels struct {
	llm.Client
	t *activityTimings
}

func (m timedModels) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	defer m.t.since("  model call (HTTP to the test model)", time.Now())
	return m.Client.Complete(ctx, req)
}

// timedTransport times the HTTP exchange alone: the test model's side
// (reading and parsing the request, answering) plus loopback; the rest of
// the model call is the llm client encoding the request and decoding the
// answer. It also records the request's size.
type timedTransport struct {
	http.RoundTripper
	t *activityTimings
}

func (x timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := x.RoundTripper.RoundTrip(req)
	x.t.since("    HTTP round trip (test model side + loopback)", start)
	x.t.addSize(req.ContentLength)
	return resp, err
}

type timedTranscript struct {
	activities.Transcript
	t *activityTimings
}

func (x timedTranscript) WriteAt(ctx context.Context, k activities.TranscriptKey, pos int, m contract.Message) error {
	defer x.t.since("  transcript WriteAt (input, stamped output)", time.Now())
	return x.Transcript.WriteAt(ctx, k, pos, m)
}

func (x timedTranscript) PutPending(ctx context.Context, k activities.TranscriptKey, pos, turn int, m contract.Message) (contract.Message, error) {
	defer x.t.since("  transcript PutPending (the new output)", time.Now())
	return x.Transcript.PutPending(ctx, k, pos, turn, m)
}

func (x timedTranscript) GetPending(ctx context.Context, k activities.TranscriptKey, pos, turn int) (contract.Message, error) {
	defer x.t.since("  transcript GetPending (previous output)", time.Now())
	return x.Transcript.GetPending(ctx, k, pos, turn)
}

func (x timedTranscript) Window(ctx context.Context, k activities.TranscriptKey, end, budget int) (int, []contract.Message, error) {
	defer x.t.since("  transcript Window (the model's context)", time.Now())
	return x.Transcript.Window(ctx, k, end, budget)
}
