package cleanup

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/internal/activities"
)

// DeleteTask terminates, then purges, then deletes the executions of every
// task of the tree, and purges once more; the counts add up.
func TestDeleteTaskStepsInOrder(t *testing.T) {
	env := deleteTaskEnv()
	var order []string
	env.OnActivity(activities.FindSubTasksName, mock.Anything, TaskInput{TaskID: "p"}).Return([]string{"p", "p.c.t1.c0"}, nil)
	env.OnActivity(activities.TerminateTaskName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in TaskInput) (bool, error) {
			order = append(order, "terminate "+in.TaskID)
			return in.TaskID == "p", nil
		})
	purges := 0
	env.OnActivity(PurgeTaskObjectsName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in PurgeInput) (PurgeResult, error) {
			order = append(order, "purge "+in.TaskID)
			purges++
			if purges > 2 {
				return PurgeResult{}, nil // the second pass finds nothing
			}
			return PurgeResult{TranscriptObjects: 3, Files: 1, Events: 2}, nil
		})
	env.OnActivity(activities.DeleteExecutionsName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in TaskInput) (int, error) {
			order = append(order, "delete "+in.TaskID)
			return 2, nil
		})
	env.ExecuteWorkflow(DeleteTaskName, TaskInput{TaskID: "p"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res DeleteResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, DeleteResult{Tasks: []string{"p", "p.c.t1.c0"}, Terminated: 1, Executions: 4,
		PurgeResult: PurgeResult{TranscriptObjects: 6, Files: 2, Events: 4}}, res)
	require.True(t, res.Found())
	require.Equal(t, []string{"terminate p", "terminate p.c.t1.c0", "purge p", "purge p.c.t1.c0",
		"delete p", "delete p.c.t1.c0", "purge p", "purge p.c.t1.c0"}, order)
}

// deleteTaskEnv is DeleteTask with its activities registered under their
// names (each test scripts them with OnActivity).
func deleteTaskEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(DeleteTask, workflow.RegisterOptions{Name: DeleteTaskName})
	a := &Activities{}
	env.RegisterActivityWithOptions(a.FindSubTasks, activity.RegisterOptions{Name: activities.FindSubTasksName})
	env.RegisterActivityWithOptions(a.TerminateTask, activity.RegisterOptions{Name: activities.TerminateTaskName})
	env.RegisterActivityWithOptions(a.PurgeTaskObjects, activity.RegisterOptions{Name: PurgeTaskObjectsName})
	env.RegisterActivityWithOptions(a.DeleteExecutions, activity.RegisterOptions{Name: activities.DeleteExecutionsName})
	return env
}

func TestDeleteTaskNeedsATaskID(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(DeleteTask, workflow.RegisterOptions{Name: DeleteTaskName})
	env.ExecuteWorkflow(DeleteTaskName, TaskInput{})
	require.ErrorContains(t, env.GetWorkflowError(), "taskId is empty")
}

func TestIsChildIDFollowsTheDelegateScheme(t *testing.T) {
	for id, want := range map[string]bool{
		"p.help.t1.c0":         true,
		"p.help.t12.c3":        true,
		"p.help.t1.c0.x.t2.c1": false, // a grandchild: found under its parent
		"p.other":              false,
		"px.help.t1.c0":        false,
		"p..t1.c0":             false,
	} {
		require.Equal(t, want, isChildID("p", id), id)
	}
}

func TestQuoteEscapesTheLiteral(t *testing.T) {
	require.Equal(t, `'a\'b\\c'`, quote(`a'b\c`))
}

// The deletion's activities remove any task they are given: no agent may
// call them as a capability (refused from rules 11, rulesMCP, on).
func TestTheDeletionsActivitiesAreRuntimeNames(t *testing.T) {
	for _, n := range []string{PurgeTaskObjectsName, activities.FindSubTasksName, activities.TerminateTaskName, activities.DeleteExecutionsName} {
		require.True(t, activities.IsRuntimeName(n, true), n)
		require.False(t, activities.IsRuntimeName(n, false), "%s: older rules accepted it, and replay must", n)
	}
}

// The retention sweep's deletion (KeepIfRunning) of a task that runs again
// removes nothing: TerminateTask refuses, and no purge or deletion follows.
func TestDeleteTaskKeepsATaskThatRunsAgain(t *testing.T) {
	env := deleteTaskEnv()
	env.OnActivity(activities.FindSubTasksName, mock.Anything, mock.Anything).Return([]string{"p"}, nil)
	var got TaskInput
	env.OnActivity(activities.TerminateTaskName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in TaskInput) (bool, error) {
			got = in
			return false, temporal.NewNonRetryableApplicationError("task p runs again", ErrTaskRunning, nil)
		})
	purged := false
	env.OnActivity(PurgeTaskObjectsName, mock.Anything, mock.Anything).Return(
		func(context.Context, PurgeInput) (PurgeResult, error) { purged = true; return PurgeResult{}, nil })
	env.ExecuteWorkflow(DeleteTaskName, TaskInput{TaskID: "p", KeepIfRunning: true})
	require.True(t, env.IsWorkflowCompleted())
	require.ErrorContains(t, env.GetWorkflowError(), "runs again")
	require.True(t, got.KeepIfRunning, "the sweep's flag reaches TerminateTask")
	require.False(t, purged, "nothing of a running task is removed")
}
