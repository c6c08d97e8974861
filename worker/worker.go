package worker

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"gocloud.dev/blob"

	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/telemetry"
	"github.com/agenttask/agenttask/internal/transcript"
	"github.com/agenttask/agenttask/internal/workflows"
)

// Register registers the workflow and activities under their API names, so
// renaming a Go function never breaks running histories.
func Register(r sdkworker.Registry, wf *workflows.Workflows, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(wf.AgentTask, workflow.RegisterOptions{Name: workflows.WorkflowType})
	r.RegisterActivityWithOptions(acts.ModelTurn, activity.RegisterOptions{Name: activities.ModelTurnName})
	r.RegisterActivityWithOptions(acts.WriteEntries, activity.RegisterOptions{Name: activities.WriteEntriesName})
	r.RegisterActivityWithOptions(acts.CheckInput, activity.RegisterOptions{Name: activities.CheckInputName})
	r.RegisterActivityWithOptions(acts.CopyFiles, activity.RegisterOptions{Name: activities.CopyFilesName})
	r.RegisterActivityWithOptions(acts.DescribeWorker, activity.RegisterOptions{Name: activities.DescribeWorkerName})
	r.RegisterActivityWithOptions(acts.Shape, activity.RegisterOptions{Name: activities.ShapeName})
	r.RegisterActivityWithOptions(acts.StashPut, activity.RegisterOptions{Name: activities.StashPutName})
	r.RegisterActivityWithOptions(acts.StashGet, activity.RegisterOptions{Name: activities.StashGetName})
	r.RegisterActivityWithOptions(acts.StoreValue, activity.RegisterOptions{Name: activities.StoreValueName})
}

// Run serves the task queue until ctx is done.
func Run(ctx context.Context, cfg Config, c client.Client) error {
	var wrap func(*blob.Bucket) *blob.Bucket
	if cfg.Codec != nil {
		wrap = cfg.Codec.WrapBucket // transcript and stash objects encrypted
	}
	store, err := transcript.OpenWith(ctx, cfg.TranscriptURL, wrap)
	if err != nil {
		return fmt.Errorf("opening the transcript store %s: %w", cfg.TranscriptURL, err)
	}
	defer store.Close()
	tr := TranscriptAdapter{Store: store}
	files := mount.NewStoreWith(cfg.WrapMountBucket)
	defer files.Close()
	// The broker is optional at run time: without it (now or later) the
	// worker serves, and streamed turns run unstreamed.
	events := cfg.Broker
	if events == nil && cfg.BrokerURL != "" {
		events, err = broker.Start(cfg.BrokerURL, "agenttask-worker "+cfg.TaskQueue, nil)
		if err != nil {
			return fmt.Errorf("the broker %s (%s): %w", broker.Redact(cfg.BrokerURL), broker.EnvURL, err)
		}
		defer events.Close()
	}
	opts := sdkworker.Options{
		// Heartbeats reach the server at least every second whatever the
		// heartbeat timeout (30 s for model calls), so cancel-turn reaches a
		// running call within about two seconds.
		MaxHeartbeatThrottleInterval: time.Second,
	}
	cfg.Tuning.Apply(&opts)
	// Model calls run in the trace of the input they answer (after the
	// client's tracing interceptor, when it has one).
	opts.Interceptors = append(opts.Interceptors, telemetry.TurnTraces())
	cfg.Tuning.SetStickyCache()
	w := sdkworker.New(c, cfg.TaskQueue, opts)
	// The `messages` query reads earlier runs without waiting on storage
	// under the workflow's lock (QueryReader).
	Register(w, &workflows.Workflows{Transcript: NewQueryReader(tr)}, &activities.Activities{
		Models:      llm.NewRouter(cfg.Models),
		Transcript:  tr,
		Files:       files,
		Mounts:      cfg.Mounts,
		OutputModel: cfg.OutputModel,
		Signals:     c, // retry reports to the task (status.retrying)
		Broker:      events,
		Metrics:     cfg.Metrics,
	})
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the worker on %q: %w", cfg.TaskQueue, err)
	}
	<-ctx.Done()
	w.Stop()
	return nil
}

// Apply sets the SDK options t gives; zero fields leave the SDK's defaults.
func (t Tuning) Apply(o *sdkworker.Options) {
	if t.WorkflowSlots > 0 {
		o.MaxConcurrentWorkflowTaskExecutionSize = t.WorkflowSlots
	}
	if t.ActivitySlots > 0 {
		o.MaxConcurrentActivityExecutionSize = t.ActivitySlots
	}
	if t.WorkflowPollers > 0 {
		o.MaxConcurrentWorkflowTaskPollers = t.WorkflowPollers
	}
	if t.ActivityPollers > 0 {
		o.MaxConcurrentActivityTaskPollers = t.ActivityPollers
	}
	if t.StickyTimeout > 0 {
		o.StickyScheduleToStartTimeout = t.StickyTimeout
	}
	if t.StopTimeout > 0 {
		o.WorkerStopTimeout = t.StopTimeout
	}
}

// SetStickyCache sizes the process's sticky workflow cache when t says so.
// The SDK reads the size when the process's first worker is created (all
// workers of a process share the cache), so it must run before that: Run
// calls it just before creating its worker; a program that creates other
// workers first calls it itself.
func (t Tuning) SetStickyCache() {
	if t.StickyCache > 0 {
		sdkworker.SetStickyWorkflowCacheSize(t.StickyCache)
	}
}
