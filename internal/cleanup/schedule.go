package cleanup

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// The retention schedule: a Temporal Schedule that starts RetentionSweep
// on the runtime's task queue every SweepEvery(retention). It lives in
// Temporal (durable, shown in the Web UI's Schedules with its note), not in
// a process. Each worker ensures it when it starts (worker.Run): created
// when absent, updated when its interval or queue differ, deleted when the
// worker's retention is off. A schedule per task queue, since each queue's
// workers share one transcript store. Overlaps are skipped: one sweep at a
// time.

// ScheduleID is the retention schedule of queue.
func ScheduleID(queue string) string { return "agenttask-retention:" + queue }

// SweepWorkflowID is the ID of the sweeps the schedule starts (Temporal
// appends each start's time).
func SweepWorkflowID(queue string) string { return "agenttask-retention-sweep:" + queue }

// scheduleNote is what the Web UI shows of the schedule.
func scheduleNote(retention time.Duration) string {
	return fmt.Sprintf("Removes the objects (transcripts, stash, files, streamed events) of agent tasks closed for more than AGENT_RETENTION (%s), and their closed executions; runs RetentionSweep (docs/design.md, Retention).", retention)
}

// EnsureSchedule makes the retention schedule of queue match retention
// (0: off, the schedule deleted). It is idempotent: workers starting at
// once converge on the same schedule.
func EnsureSchedule(ctx context.Context, c client.Client, queue string, retention time.Duration) error {
	sc := c.ScheduleClient()
	id := ScheduleID(queue)
	h := sc.GetHandle(ctx, id)
	desc, err := h.Describe(ctx)
	var nf *serviceerror.NotFound
	found := err == nil
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("the retention schedule %s: %w", id, err)
	}
	if retention <= 0 {
		if found {
			if err := h.Delete(ctx); err != nil && !errors.As(err, &nf) {
				return fmt.Errorf("deleting the retention schedule %s (retention off): %w", id, err)
			}
		}
		return nil
	}
	every := SweepEvery(retention)
	want := &client.Schedule{
		Spec:   &client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Action: sweepAction(queue, retention),
		Policy: &client.SchedulePolicies{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, CatchupWindow: every},
		State:  &client.ScheduleState{Note: scheduleNote(retention)},
	}
	if !found {
		_, err := sc.Create(ctx, client.ScheduleOptions{
			ID:            id,
			Spec:          *want.Spec,
			Action:        want.Action,
			Overlap:       want.Policy.Overlap,
			CatchupWindow: want.Policy.CatchupWindow,
			Note:          want.State.Note,
			Memo:          map[string]any{"purpose": "agenttask retention", "retention": retention.String(), "taskQueue": queue},
		})
		if err == nil || errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
			return nil // created, or by another worker meanwhile
		}
		return fmt.Errorf("creating the retention schedule %s: %w", id, err)
	}
	if matches(desc, queue, every, retention) {
		return nil
	}
	return h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := in.Description.Schedule
		s.Spec, s.Action, s.Policy = want.Spec, want.Action, want.Policy
		if s.State == nil {
			s.State = &client.ScheduleState{}
		}
		s.State.Note = want.State.Note
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}})
}

// sweepAction starts a RetentionSweep from the store's start.
func sweepAction(queue string, retention time.Duration) *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		ID:                       SweepWorkflowID(queue),
		Workflow:                 RetentionSweepName,
		Args:                     []any{SweepInput{Retention: retention}},
		TaskQueue:                queue,
		WorkflowExecutionTimeout: 24 * time.Hour,
		Memo:                     map[string]any{"purpose": "agenttask retention sweep"},
		StaticSummary:            fmt.Sprintf("retention sweep: remove tasks closed for more than %s", retention),
	}
}

// matches says whether the schedule is the one retention wants: its
// interval, its queue and workflow, its note (which names the retention).
func matches(d *client.ScheduleDescription, queue string, every, retention time.Duration) bool {
	s := d.Schedule
	if s.Spec == nil || len(s.Spec.Intervals) != 1 || s.Spec.Intervals[0].Every != every || s.Spec.Intervals[0].Offset != 0 ||
		len(s.Spec.Calendars) != 0 || len(s.Spec.CronExpressions) != 0 {
		return false
	}
	a, ok := s.Action.(*client.ScheduleWorkflowAction)
	if !ok || a.TaskQueue != queue || a.ID != SweepWorkflowID(queue) {
		return false
	}
	if name, ok := a.Workflow.(string); !ok || name != RetentionSweepName {
		return false
	}
	if s.Policy == nil || s.Policy.Overlap != enumspb.SCHEDULE_OVERLAP_POLICY_SKIP {
		return false
	}
	return s.State != nil && s.State.Note == scheduleNote(retention)
}
