package workerkit

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/workflows"
)

// Registry is where Register registers: a worker, a plugin's registry, a
// test environment.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers the workflow and activities under their API names, so
// renaming a Go function never breaks running histories. acts nil
// registers the workflow alone (a replayer).
func Register(r Registry, wf *workflows.Workflows, acts *activities.Activities) {
	// Pinned: on a versioned worker (deployment.go) a run stays on the
	// version that started it; unversioned workers ignore the behaviour.
	r.RegisterWorkflowWithOptions(wf.AgentTask, workflow.RegisterOptions{Name: contract.WorkflowType, VersioningBehavior: workflow.VersioningBehaviorPinned})
	if acts == nil {
		return
	}
	r.RegisterActivityWithOptions(acts.ModelTurn, activity.RegisterOptions{Name: activities.ModelTurnName})
	r.RegisterActivityWithOptions(acts.WriteEntries, activity.RegisterOptions{Name: activities.WriteEntriesName})
	r.RegisterActivityWithOptions(acts.CheckInput, activity.RegisterOptions{Name: activities.CheckInputName})
	r.RegisterActivityWithOptions(acts.CopyFiles, activity.RegisterOptions{Name: activities.CopyFilesName})
	r.RegisterActivityWithOptions(acts.DescribeWorker, activity.RegisterOptions{Name: activities.DescribeWorkerName})
	r.RegisterActivityWithOptions(acts.Shape, activity.RegisterOptions{Name: activities.ShapeName})
	r.RegisterActivityWithOptions(acts.PublishEvents, activity.RegisterOptions{Name: activities.PublishEventsName})
	r.RegisterActivityWithOptions(acts.StashPut, activity.RegisterOptions{Name: activities.StashPutName})
	r.RegisterActivityWithOptions(acts.StashGet, activity.RegisterOptions{Name: activities.StashGetName})
	r.RegisterActivityWithOptions(acts.StoreValue, activity.RegisterOptions{Name: activities.StoreValueName})
	r.RegisterActivityWithOptions(acts.ListMCPTools, activity.RegisterOptions{Name: activities.ListMCPToolsName})
	r.RegisterActivityWithOptions(acts.CallMCPTool, activity.RegisterOptions{Name: activities.CallMCPToolName})
	r.RegisterActivityWithOptions(acts.SendA2AMessage, activity.RegisterOptions{Name: activities.SendA2AMessageName})
	r.RegisterActivityWithOptions(acts.GetA2ATask, activity.RegisterOptions{Name: activities.GetA2ATaskName})
	r.RegisterActivityWithOptions(acts.CancelA2ATask, activity.RegisterOptions{Name: activities.CancelA2ATaskName})
}

// Run serves the task queue until ctx is done: a worker of c on
// cfg.TaskQueue with the plugin (NewPlugin) and nothing else, so what the
// worker binary runs is what a team's worker gets from the plugin.
func Run(ctx context.Context, cfg Config, c client.Client) error {
	p, err := NewPlugin(cfg)
	if err != nil {
		return err
	}
	w := sdkworker.New(c, cfg.TaskQueue, sdkworker.Options{Plugins: []sdkworker.Plugin{p}})
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the worker on %q: %w", cfg.TaskQueue, err)
	}
	go keepRetention(ctx, c, cfg) // the queue's retention schedule (retention.go)
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
// (through NewPlugin) calls it before creating its worker; a program that creates other
// workers first calls it itself.
func (t Tuning) SetStickyCache() {
	if t.StickyCache > 0 {
		sdkworker.SetStickyWorkflowCacheSize(t.StickyCache)
	}
}
