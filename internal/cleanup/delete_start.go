package cleanup

import (
	"context"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// deleteTimeout bounds one DeleteTask run (its activities' retries fit).
const deleteTimeout = time.Hour

// StartDelete starts the DeleteTask workflow of taskID on queue (the
// runtime's), or joins the one already running; a deletion that finished
// is started again (it finds what is left, usually nothing).
func StartDelete(ctx context.Context, c client.Client, queue, taskID string) (client.WorkflowRun, error) {
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       DeleteWorkflowID(taskID),
		TaskQueue:                queue,
		WorkflowExecutionTimeout: deleteTimeout,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "delete task " + taskID,
	}, DeleteTaskName, TaskInput{TaskID: taskID})
}
