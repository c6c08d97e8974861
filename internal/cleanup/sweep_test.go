package cleanup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// sweepEnv is RetentionSweep with its page activity scripted: pages pages
// of one expired task each, and DeleteTask children that report 3 objects
// (or fail for the task IDs in failing).
func sweepEnv(t *testing.T, pages int, failing map[string]bool) (*testsuite.TestWorkflowEnvironment, *[]string) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(RetentionSweep, workflow.RegisterOptions{Name: RetentionSweepName})
	sw := &Sweeper{}
	env.RegisterActivityWithOptions(sw.SweepPage, activity.RegisterOptions{Name: SweepPageName})
	var deleted []string
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in TaskInput) (DeleteResult, error) {
		if failing[in.TaskID] {
			return DeleteResult{}, errors.New("storage down")
		}
		deleted = append(deleted, in.TaskID)
		return DeleteResult{Tasks: []string{in.TaskID}, PurgeResult: PurgeResult{TranscriptObjects: 3}}, nil
	}, workflow.RegisterOptions{Name: DeleteTaskName})
	env.OnActivity(SweepPageName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in SweepPageInput) (SweepPageResult, error) {
			n := 0
			if len(in.Cursor) > 0 {
				fmt.Sscan(string(in.Cursor), &n)
			}
			res := SweepPageResult{Expired: []string{fmt.Sprintf("task-%02d", n)}, Counts: SweepTotals{Tasks: 2, Kept: 1}}
			if n+1 < pages {
				res.Next = []byte(fmt.Sprint(n + 1))
			}
			return res, nil
		})
	return env, &deleted
}

// A sweep of fewer pages than a run holds ends with the totals; each
// expired task is deleted by a DeleteTask child.
func TestRetentionSweepDeletesExpiredTasks(t *testing.T) {
	env, deleted := sweepEnv(t, 3, map[string]bool{"task-01": true})
	env.ExecuteWorkflow(RetentionSweepName, SweepInput{})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var totals SweepTotals
	require.NoError(t, env.GetWorkflowResult(&totals))
	require.Equal(t, SweepTotals{Tasks: 6, Kept: 3, Deleted: 2, Objects: 6, Failures: 1}, totals)
	sort.Strings(*deleted)
	require.Equal(t, []string{"task-00", "task-02"}, *deleted)
}

// A store larger than a run's pages is swept in bounded runs: the run
// continues as new with the cursor and the totals so far.
func TestRetentionSweepContinuesAsNew(t *testing.T) {
	env, deleted := sweepEnv(t, SweepPagesPerRun+5, nil)
	env.ExecuteWorkflow(RetentionSweepName, SweepInput{})
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "%v", env.GetWorkflowError())
	require.Equal(t, RetentionSweepName, can.WorkflowType.Name)
	require.Len(t, *deleted, SweepPagesPerRun)
	var next SweepInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, fmt.Sprint(SweepPagesPerRun), string(next.Cursor))
	require.Equal(t, 1, next.Runs)
	require.Equal(t, SweepTotals{Tasks: 2 * SweepPagesPerRun, Kept: SweepPagesPerRun, Deleted: SweepPagesPerRun, Objects: 3 * SweepPagesPerRun}, next.Totals)
}

// A worker with retention off answers Off: the sweep removes nothing.
func TestRetentionSweepOff(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(RetentionSweep, workflow.RegisterOptions{Name: RetentionSweepName})
	sw := &Sweeper{} // Retention 0
	env.RegisterActivityWithOptions(sw.SweepPage, activity.RegisterOptions{Name: SweepPageName})
	env.ExecuteWorkflow(RetentionSweepName, SweepInput{})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var totals SweepTotals
	require.NoError(t, env.GetWorkflowResult(&totals))
	require.Equal(t, SweepTotals{}, totals)
}
