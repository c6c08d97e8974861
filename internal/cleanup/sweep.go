package cleanup

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/internal/activities"
)

// RetentionSweep walks the transcript store's task folders a page at a
// time (SweepPage) and deletes each expired task with DeleteTask, run as a
// child (its objects purged, its closed executions deleted, its sub-tasks
// too). The schedule (schedule.go) starts it every SweepEvery; one run
// handles at most SweepPagesPerRun pages, then continues as new with the
// store's cursor, so a huge store is walked in bounded steps and a run's
// history stays small. What expires is decided by the worker that runs
// SweepPage, with its own AGENT_RETENTION (Decide).

// Names (API: add, never rename).
const (
	RetentionSweepName = "RetentionSweep"
	SweepPageName      = activities.SweepPageName
)

// Bounds of a sweep.
const (
	// SweepPageSize is how many task folders one SweepPage looks at.
	SweepPageSize = 100
	// SweepPagesPerRun is how many pages one run sweeps before it
	// continues as new.
	SweepPagesPerRun = 10
	// sweepDeletesAtOnce bounds the DeleteTask children running at once.
	sweepDeletesAtOnce = 8
)

// SweepInput is where a sweep starts: the schedule gives the zero value
// (from the store's start); a continued run the cursor of the next page.
type SweepInput struct {
	// Retention is the schedule's (the AGENT_RETENTION of the workers that
	// keep it): the sweep judges by it, whatever the worker that runs a
	// page was configured with (0: that worker's own).
	Retention time.Duration `json:"retention,omitempty"`
	Cursor    []byte        `json:"cursor,omitempty"`
	// Totals so far, over the runs of one sweep.
	Totals SweepTotals `json:"totals"`
	// Runs is how many runs the sweep took before this one.
	Runs int `json:"runs,omitempty"`
}

// SweepTotals count what a sweep found and did.
type SweepTotals struct {
	Tasks    int `json:"tasks"`              // task folders looked at
	Kept     int `json:"kept"`               // not expired
	Sealed   int `json:"sealed"`             // closed, their last entries written from Temporal (seal.go)
	Unnamed  int `json:"unnamed,omitempty"`  // folders whose task ID could not be read back: kept
	Deleted  int `json:"deleted"`            // expired and deleted
	Objects  int `json:"objects"`            // objects those deletions removed
	Failures int `json:"failures,omitempty"` // expired tasks whose deletion failed (the next sweep tries again)
	// KeptForContinuations counts deleted tasks (counted in Kept) whose
	// transcripts stay because a live continuation reads them.
	KeptForContinuations int `json:"keptForContinuations,omitempty"`
	// Spaces counts the task spaces of the mounts that have no transcript
	// (files uploaded for a task that never started), judged by the age of
	// their newest file; kept ones are counted in Kept, expired ones in
	// Deleted.
	Spaces int `json:"spaces,omitempty"`
}

func (t SweepTotals) add(o SweepTotals) SweepTotals {
	return SweepTotals{Tasks: t.Tasks + o.Tasks, Kept: t.Kept + o.Kept, Sealed: t.Sealed + o.Sealed, Unnamed: t.Unnamed + o.Unnamed,
		Deleted: t.Deleted + o.Deleted, Objects: t.Objects + o.Objects, Failures: t.Failures + o.Failures,
		KeptForContinuations: t.KeptForContinuations + o.KeptForContinuations, Spaces: t.Spaces + o.Spaces}
}

// SweepPageInput asks for one page of task folders.
type SweepPageInput struct {
	Retention time.Duration `json:"retention,omitempty"` // 0: the worker's own
	Cursor    []byte        `json:"cursor,omitempty"`
	Size      int           `json:"size"`
}

// SweepPageResult is one page's decision: the expired task IDs, what was
// kept, and the next page's cursor (none: the store's end).
type SweepPageResult struct {
	Expired []string    `json:"expired,omitempty"`
	Counts  SweepTotals `json:"counts"`
	Next    []byte      `json:"next,omitempty"`
	// Off: the worker that ran the page has retention off; nothing expired.
	Off bool `json:"off,omitempty"`
}

// RetentionSweep is the workflow. It is deterministic: its only commands
// are the activities, the children and the continue-as-new.
func RetentionSweep(ctx workflow.Context, in SweepInput) (SweepTotals, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10},
	})
	totals := in.Totals
	cursor := in.Cursor
	for page := 0; page < SweepPagesPerRun; page++ {
		var res SweepPageResult
		if err := workflow.ExecuteActivity(summarized(actx, fmt.Sprintf("list closed tasks, page %d", page+1)), SweepPageName, SweepPageInput{Retention: in.Retention, Cursor: cursor, Size: SweepPageSize}).Get(ctx, &res); err != nil {
			return totals, err
		}
		totals = totals.add(res.Counts)
		if res.Off {
			workflow.GetLogger(ctx).Info("retention is off on the worker that swept: nothing removed")
			return totals, nil
		}
		totals = totals.add(deleteExpired(ctx, res.Expired))
		if len(res.Next) == 0 {
			workflow.GetLogger(ctx).Info("retention sweep done", "tasks", totals.Tasks, "deleted", totals.Deleted, "objects", totals.Objects, "sealed", totals.Sealed, "failures", totals.Failures)
			return totals, nil
		}
		cursor = res.Next
	}
	return totals, workflow.NewContinueAsNewError(ctx, RetentionSweepName, SweepInput{Retention: in.Retention, Cursor: cursor, Totals: totals, Runs: in.Runs + 1})
}

// deleteExpired runs DeleteTask for each expired task, a few at a time. A
// deletion already under way (someone's DELETE, another sweep) is left to
// finish; a failed one is counted, and the next sweep finds the task again.
func deleteExpired(ctx workflow.Context, ids []string) SweepTotals {
	var t SweepTotals
	for start := 0; start < len(ids); start += sweepDeletesAtOnce {
		batch := ids[start:min(start+sweepDeletesAtOnce, len(ids))]
		futures := make([]workflow.ChildWorkflowFuture, len(batch))
		for i, id := range batch {
			cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
				WorkflowID:               DeleteWorkflowID(id),
				WorkflowExecutionTimeout: deleteTimeout,
				StaticSummary:            fmt.Sprintf("retention: delete task %s", id),
			})
			futures[i] = workflow.ExecuteChildWorkflow(cctx, DeleteTaskName, TaskInput{TaskID: id, KeepIfRunning: true})
		}
		for i, f := range futures {
			var r DeleteResult
			err := f.Get(ctx, &r)
			switch {
			case err == nil:
				t.Deleted++
				t.Objects += r.Total()
			case temporal.IsWorkflowExecutionAlreadyStartedError(err):
				t.Deleted++ // another deletion of it runs
			default:
				t.Failures++
				workflow.GetLogger(ctx).Warn("retention: deleting an expired task failed; the next sweep tries again", "task", batch[i], "error", err)
			}
		}
	}
	return t
}

// RegisterRetention registers RetentionSweep and its activity under their
// API names on the runtime's queue (beside Register's DeleteTask, which
// the sweep runs). The sweep upgrades on a versioned worker: it is short,
// and its next tick starts afresh anyway.
func RegisterRetention(r Registry, s *Sweeper) {
	r.RegisterWorkflowWithOptions(RetentionSweep, workflow.RegisterOptions{Name: RetentionSweepName, VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
	r.RegisterActivityWithOptions(s.SweepPage, activity.RegisterOptions{Name: SweepPageName})
}
