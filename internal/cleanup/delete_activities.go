package cleanup

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
)

// The activities of DeleteTask that use the Temporal client: the worker's
// own (activity.GetClient), in the namespace of the workflow they serve.

// Bounds of one deletion: how many tasks a tree may hold and how deep
// sub-tasks may nest (a delegate's own delegates), how long one
// DeleteExecutions attempt waits for Temporal's asynchronous deletion.
const (
	MaxTasks       = 1000
	MaxDepth       = 16
	deleteWaitFor  = 2 * time.Minute
	deletePollWait = 500 * time.Millisecond
	listPage       = 1000
)

// TaskInput names one task.
type TaskInput struct {
	TaskID string `json:"taskId"`
	// KeepIfRunning is the retention sweep's: it decided the task had
	// been closed long enough, and a deletion started later must not end
	// a run begun since (a task ID reused). TerminateTask then refuses a
	// running task (TASK_RUNNING) instead of terminating it, and nothing
	// is removed.
	KeepIfRunning bool `json:"keepIfRunning,omitempty"`
}

// ErrTaskRunning is TerminateTask's refusal under KeepIfRunning.
const ErrTaskRunning = contract.ErrTaskRunning

// FindSubTasks lists the task and every sub-task under it, the task first,
// parents before their sub-tasks (breadth first, at most MaxTasks, MaxDepth
// levels). A sub-task is found through visibility (its ParentWorkflowId)
// while Temporal keeps its execution, and through the transcript store's
// folders named by the sub-task ID scheme ("<parent>.<capability>.t<turn>.c<call>",
// workflows/delegate.go) once Temporal no longer does, so a task whose
// history retention removed still has its sub-tasks' objects found.
func (a *Activities) FindSubTasks(ctx context.Context, in TaskInput) ([]string, error) {
	if in.TaskID == "" {
		return nil, temporal.NewNonRetryableApplicationError("FindSubTasks: taskId is empty", contract.ErrInvalidInput, nil)
	}
	c := activity.GetClient(ctx)
	// Only an agent task: a workflow ID of another type (the Tasks API's
	// stored prompts, a team's own workflow, a sweep) is not ours to end.
	d, err := c.DescribeWorkflowExecution(ctx, in.TaskID, "")
	if err != nil && !isNotFound(err) {
		return nil, fmt.Errorf("describing %s: %w", in.TaskID, err)
	}
	if t := d.GetWorkflowExecutionInfo().GetType().GetName(); err == nil && t != contract.WorkflowType {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s is a %s workflow, not an agent task (%s): nothing deleted", in.TaskID, t, contract.WorkflowType), contract.ErrInvalidInput, nil)
	}
	seen := map[string]bool{in.TaskID: true}
	all := []string{in.TaskID}
	level := []string{in.TaskID}
	for depth := 0; depth < MaxDepth && len(level) > 0; depth++ {
		var next []string
		for _, id := range level {
			kids, err := a.subTasksOf(ctx, c, id)
			if err != nil {
				return nil, err
			}
			for _, k := range kids {
				if seen[k] {
					continue
				}
				if len(all) >= MaxTasks {
					return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("task %s has more than %d tasks under it; delete its sub-tasks' own trees first", in.TaskID, MaxTasks), contract.ErrInvalidInput, nil)
				}
				seen[k] = true
				all = append(all, k)
				next = append(next, k)
			}
			activity.RecordHeartbeat(ctx, len(all))
		}
		level = next
	}
	return all, nil
}

// subTasksOf is the direct sub-tasks of id.
func (a *Activities) subTasksOf(ctx context.Context, c client.Client, id string) ([]string, error) {
	var out []string
	ids, err := listIDs(ctx, c, "ParentWorkflowId = "+quote(id))
	if err != nil {
		return nil, err
	}
	out = append(out, ids...)
	if a.Storage.Transcript != nil {
		folders, err := a.Storage.Transcript.TaskFolders(ctx, id+".", MaxTasks)
		if err != nil {
			return nil, err
		}
		for _, f := range folders {
			// Only this task's own sub-tasks: "<id>.x.t1.c0", not "<id>.x.t1.c0.y.t2.c1"
			// (a grandchild, found under its parent) nor another task's ID.
			if !isChildID(id, f) {
				continue
			}
			// A folder's name alone is no proof: a task of its own may
			// have been started with an ID of the sub-task scheme. While
			// Temporal knows the workflow, only its parent decides; a
			// folder Temporal has forgotten is taken by its name.
			mine, err := childOf(ctx, c, id, f)
			if err != nil {
				return nil, err
			}
			if mine {
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// childOf reports whether Temporal's execution of id names parent as its
// parent, or Temporal no longer knows id (its history is gone).
func childOf(ctx context.Context, c client.Client, parent, id string) (bool, error) {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("describing %s: %w", id, err)
	}
	return d.GetWorkflowExecutionInfo().GetParentExecution().GetWorkflowId() == parent, nil
}

// childTail is workflows/delegate.go's sub-task ID scheme's tail.
var childTail = regexp.MustCompile(`^[^.]+\.t[0-9]+\.c[0-9]+$`)

// isChildID reports whether id names a direct sub-task of parent.
func isChildID(parent, id string) bool {
	rest, ok := strings.CutPrefix(id, parent+".")
	return ok && childTail.MatchString(rest)
}

// listIDs lists the distinct workflow IDs a visibility query finds (every
// page, at most MaxTasks).
func listIDs(ctx context.Context, c client.Client, query string) ([]string, error) {
	runs, err := listRuns(ctx, c, query)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var ids []string
	for _, r := range runs {
		if !seen[r.GetWorkflowId()] {
			seen[r.GetWorkflowId()] = true
			ids = append(ids, r.GetWorkflowId())
		}
	}
	return ids, nil
}

func listRuns(ctx context.Context, c client.Client, query string) ([]*commonpb.WorkflowExecution, error) {
	var out []*commonpb.WorkflowExecution
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: listPage, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("visibility %q: %w", query, err)
		}
		for _, e := range resp.GetExecutions() {
			out = append(out, e.GetExecution())
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 || len(out) >= 10*MaxTasks {
			return out, nil
		}
	}
}

// quote is a visibility query's string literal.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// TerminateTask ends the task's running execution, if any (of its chain
// of continued runs only the last can run). A task that is closed or
// unknown is not an error.
func (a *Activities) TerminateTask(ctx context.Context, in TaskInput) (bool, error) {
	c := activity.GetClient(ctx)
	terminated := false
	for range 5 { // a run started meanwhile (continue-as-new racing the first terminate) is ended too
		d, err := c.DescribeWorkflowExecution(ctx, in.TaskID, "")
		if isNotFound(err) {
			return terminated, nil
		}
		if err != nil {
			return terminated, err
		}
		if d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return terminated, nil
		}
		if in.KeepIfRunning {
			return false, temporal.NewNonRetryableApplicationError(fmt.Sprintf("task %s runs again (started after the retention sweep judged it expired): kept", in.TaskID), ErrTaskRunning, nil)
		}
		err = c.TerminateWorkflow(ctx, in.TaskID, d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "deleted (DeleteTask)")
		if err != nil && !isNotFound(err) {
			return terminated, err
		}
		terminated = true
	}
	return terminated, errors.New("the task keeps running after 5 terminations; retrying")
}

// DeleteExecutions deletes every execution of the task's chain (each run,
// continued-as-new ones included: all that visibility lists for the
// workflow ID, and the current one Describe finds) and waits, bounded,
// until Temporal's asynchronous deletion is done: Describe answers
// NotFound and visibility lists none. It returns how many runs it asked
// Temporal to delete; a task already gone returns 0.
func (a *Activities) DeleteExecutions(ctx context.Context, in TaskInput) (int, error) {
	c := activity.GetClient(ctx)
	ns := activity.GetInfo(ctx).Namespace
	asked := map[string]bool{}
	deadline := time.Now().Add(deleteWaitFor)
	for {
		runs, err := listRuns(ctx, c, "WorkflowId = "+quote(in.TaskID))
		if err != nil {
			return len(asked), err
		}
		d, err := c.DescribeWorkflowExecution(ctx, in.TaskID, "")
		switch {
		case isNotFound(err):
		case err != nil:
			return len(asked), err
		default:
			runs = append(runs, d.GetWorkflowExecutionInfo().GetExecution())
		}
		if len(runs) == 0 {
			return len(asked), nil
		}
		for _, r := range runs {
			if asked[r.GetRunId()] {
				continue // asked already: Temporal is deleting it
			}
			_, err := c.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{
				Namespace: ns, WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: in.TaskID, RunId: r.GetRunId()}})
			if err != nil && !isNotFound(err) {
				return len(asked), fmt.Errorf("delete %s run %s: %w", in.TaskID, r.GetRunId(), err)
			}
			asked[r.GetRunId()] = true
		}
		activity.RecordHeartbeat(ctx, len(asked))
		if time.Now().After(deadline) {
			return len(asked), fmt.Errorf("the executions of %s are still being deleted after %s; retrying", in.TaskID, deleteWaitFor)
		}
		select {
		case <-ctx.Done():
			return len(asked), ctx.Err()
		case <-time.After(deletePollWait):
		}
	}
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
