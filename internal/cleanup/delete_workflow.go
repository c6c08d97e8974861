package cleanup

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// DeleteTask removes a task and everything it owns, its sub-tasks too:
// their running executions are terminated, their objects purged
// (PurgeTaskObjects), and every execution of their chains deleted. It is a
// workflow so that a deletion, once started, finishes: a worker that stops
// mid-way leaves it to another, and repeating it is harmless (each step
// finds what is left; a task already gone yields zero counts).

// DeleteTaskName is the workflow's type (API: add, never rename).
const DeleteTaskName = "DeleteTask"

// DeleteWorkflowID is the ID of the DeleteTask workflow of a task: one
// deletion at a time per task, repeated deletions reuse it.
func DeleteWorkflowID(taskID string) string { return "agenttask-delete:" + taskID }

// DeleteResult is what a deletion removed.
type DeleteResult struct {
	// Tasks are the task and the sub-tasks found under it, the task first.
	Tasks []string `json:"tasks"`
	// Terminated counts the executions that were running.
	Terminated int `json:"terminated"`
	// Executions counts the runs Temporal was asked to delete.
	Executions int `json:"executions"`
	PurgeResult
}

// Found reports whether the deletion found anything of the task: an
// execution or an object. A repeated deletion finds nothing.
func (r DeleteResult) Found() bool { return r.Executions > 0 || r.Total() > 0 }

// DeleteTask is the workflow. Every step is an activity with a bounded
// retry; the workflow itself issues nothing else, so it is deterministic.
func DeleteTask(ctx workflow.Context, in TaskInput) (DeleteResult, error) {
	res := DeleteResult{}
	if in.TaskID == "" {
		return res, temporal.NewNonRetryableApplicationError("DeleteTask: taskId is empty; name the task to delete", contract.ErrInvalidInput, nil)
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: time.Minute, MaximumAttempts: 30, NonRetryableErrorTypes: []string{contract.ErrInvalidInput, ErrTaskRunning}},
	})
	if err := workflow.ExecuteActivity(summarized(ctx, "find the sub-tasks of "+in.TaskID), activities.FindSubTasksName, in).Get(ctx, &res.Tasks); err != nil {
		return res, err
	}
	// Nothing of a task may run while its objects go, or it would write
	// them again.
	for _, id := range res.Tasks {
		var was bool
		if err := workflow.ExecuteActivity(summarized(ctx, "terminate "+id+" if running"), activities.TerminateTaskName, TaskInput{TaskID: id, KeepIfRunning: in.KeepIfRunning}).Get(ctx, &was); err != nil {
			return res, err
		}
		if was {
			res.Terminated++
		}
	}
	if err := purgeAll(ctx, res.Tasks, &res.PurgeResult); err != nil {
		return res, err
	}
	for _, id := range res.Tasks {
		var n int
		if err := workflow.ExecuteActivity(summarized(ctx, "delete the executions of "+id), activities.DeleteExecutionsName, TaskInput{TaskID: id}).Get(ctx, &n); err != nil {
			return res, err
		}
		res.Executions += n
	}
	// Again, for an activity of a terminated run that was still writing
	// (it ends at its own timeout, not at the termination); usually zero.
	if err := purgeAll(ctx, res.Tasks, &res.PurgeResult); err != nil {
		return res, err
	}
	return res, nil
}

// summarized names the next activity in the Web UI (user metadata, which
// replay does not compare).
func summarized(ctx workflow.Context, summary string) workflow.Context {
	o := workflow.GetActivityOptions(ctx)
	o.Summary = summary
	return workflow.WithActivityOptions(ctx, o)
}

func purgeAll(ctx workflow.Context, ids []string, sum *PurgeResult) error {
	for _, id := range ids {
		var r PurgeResult
		if err := workflow.ExecuteActivity(summarized(ctx, "remove the stored objects of "+id), PurgeTaskObjectsName, PurgeInput{TaskID: id}).Get(ctx, &r); err != nil {
			return err
		}
		*sum = sum.Add(r)
	}
	return nil
}
