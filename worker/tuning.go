package worker

import (
	"time"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/internal/workerkit"
)

// Tuning is the SDK worker's concurrency. A zero field keeps the SDK's
// default, given beside each field (Go SDK v1.50).
type Tuning struct {
	// WorkflowSlots: workflow tasks run at once
	// (MaxConcurrentWorkflowTaskExecutionSize, default 1000).
	WorkflowSlots int
	// ActivitySlots: activities run at once, model calls included
	// (MaxConcurrentActivityExecutionSize, default 1000).
	ActivitySlots int
	// WorkflowPollers: long polls for workflow tasks, shared between the
	// normal and the sticky queue (MaxConcurrentWorkflowTaskPollers, default 2).
	WorkflowPollers int
	// ActivityPollers: long polls for activity tasks
	// (MaxConcurrentActivityTaskPollers, default 2).
	ActivityPollers int
	// StickyCache: workflows kept in memory between workflow tasks, for the
	// whole process (worker.SetStickyWorkflowCacheSize, default 10000). A
	// workflow evicted from it replays its history at its next task.
	StickyCache int
	// StickyTimeout: how long a workflow task waits on this worker's own
	// (sticky) queue before the server hands it to the task queue's other
	// workers (StickyScheduleToStartTimeout, default 5s).
	StickyTimeout time.Duration
	// StopTimeout: how long a stopping worker lets its running activities
	// finish before canceling them (WorkerStopTimeout;
	// AGENT_WORKER_STOP_TIMEOUT, DefaultStopTimeout when unset; zero, as in
	// a Tuning made in code, keeps the SDK's 0: cancel at once).
	StopTimeout time.Duration
}

// TuningFromEnv reads the AGENT_WORKER_* variables: each, when set, a
// positive integer (at least 2 for the workflow slots and pollers), or a
// duration for the sticky and stop timeouts.
func TuningFromEnv(getenv func(string) string) (Tuning, error) {
	t, err := workerkit.TuningFromEnv(getenv)
	return Tuning(t), err
}

// Apply sets the SDK options t gives; zero fields leave the SDK's defaults.
// The plugin applies it to the workers it serves.
func (t Tuning) Apply(o *sdkworker.Options) { workerkit.Tuning(t).Apply(o) }

// SetStickyCache sizes the process's sticky workflow cache when t says so.
// The SDK reads the size when the process's first worker is created (all
// workers of a process share the cache): plugin.New and Run call it; a
// program that creates other workers first calls it itself.
func (t Tuning) SetStickyCache() { workerkit.Tuning(t).SetStickyCache() }
