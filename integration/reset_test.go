package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/agenttask/agenttask/internal/activities"
)

// A Temporal reset (the Web UI's Reset button, ResetWorkflowExecution)
// replays a run up to a workflow task and carries on from there in a new
// run, which then writes transcript positions that the run it replaced
// wrote already. The new run's entries (and its pending outputs) take those
// positions: its next input is answered, the model sees the reset run's
// conversation, and `messages` lists what the reset run holds.
func TestResetAfterTheFirstTurnAnswersTheNextInput(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(echoLast)
	id := "reset-first-turn-" + h.queue
	run := startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("q1")})
	waitOutputs(t, id, 1)
	for i, q := range []string{"q2", "q3"} {
		_, err := sendUpdate(t, id, text(q))
		require.NoError(t, err)
		waitOutputs(t, id, i+2)
	}
	require.Equal(t, []string{"q1", "echo: q1", "q2", "echo: q2", "q3", "echo: q3"}, texts(messages(t, id, nil)))

	newRun := resetAfterTurn(t, id, run.GetRunID(), 1)
	require.NotEqual(t, run.GetRunID(), newRun)
	requireResetAnswers(t, h, id, newRun, []string{"q1", "echo: q1"})
	closeAndWait(t, id) // and it ends as any task does
}

// The same for a run that began with a continue-as-new: its own entries
// start past the first run's, and the reset replaces only those.
func TestResetOfAContinuedRunAnswersTheNextInput(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(echoLast)
	id := "reset-continued-" + h.queue
	startTask(t, h, id, map[string]any{"agent": agent("a"), "continueAsNewEvents": 100})
	var want []string
	for i := 0; i == 0 || status(t, id).Run < 2; i++ {
		require.Less(t, i, 40, "the task never continued as new")
		q := fmt.Sprint("m", i)
		_, err := sendUpdate(t, id, text(q))
		require.NoError(t, err)
		waitOutputs(t, id, i+1)
		want = append(want, q, "echo: "+q)
	}
	outputs := status(t, id).Outputs
	desc, err := sdk.DescribeWorkflowExecution(ctxT(t, 10*time.Second), id, "")
	require.NoError(t, err)
	second := desc.WorkflowExecutionInfo.Execution.RunId
	for i, q := range []string{"r1", "r2", "r3"} {
		_, err := sendUpdate(t, id, text(q))
		require.NoError(t, err)
		waitOutputs(t, id, outputs+i+1)
	}
	st := status(t, id)
	require.Equal(t, 2, st.Run, "the three turns ran in the second run")
	require.Equal(t, append(append([]string(nil), want...), "r1", "echo: r1", "r2", "echo: r2", "r3", "echo: r3"), texts(messages(t, id, nil)))

	newRun := resetAfterTurn(t, id, second, 1)
	require.NotEqual(t, second, newRun)
	want = requireResetAnswers(t, h, id, newRun, append(want, "r1", "echo: r1"))

	// The reset run continues as new in turn: the next run lists the reset
	// run's entries from the transcript, where they replaced the second run's.
	for i := 0; status(t, id).Run < 3; i++ {
		require.Less(t, i, 40, "the reset run never continued as new")
		q := fmt.Sprint("n", i)
		_, err := sendUpdate(t, id, text(q))
		require.NoError(t, err)
		waitOutputs(t, id, len(want)/2+1)
		want = append(want, q, "echo: "+q)
	}
	msgs := messages(t, id, nil)
	require.Equal(t, want, texts(msgs))
	requireSeedOrder(t, msgs)
	closeAndWait(t, id)
}

// resetAfterTurn resets run runID of task id to the workflow task that
// completed after the run's n-th model turn returned (excluding the signals
// and updates that came later, so the new run holds turns 1..n only), and
// returns the new run's ID.
func resetAfterTurn(t *testing.T, id, runID string, n int) string {
	t.Helper()
	events := history(t, id, runID)
	modelTurns := map[int64]bool{} // scheduled event IDs of ModelTurn
	var finish int64
	for i, e := range events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activities.ModelTurnName {
			modelTurns[e.GetEventId()] = true
		}
		a := e.GetActivityTaskCompletedEventAttributes()
		if a == nil || !modelTurns[a.GetScheduledEventId()] {
			continue
		}
		if n--; n > 0 {
			continue
		}
		for _, later := range events[i+1:] {
			if later.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
				finish = later.GetEventId()
				break
			}
		}
		break
	}
	require.NotZero(t, finish, "no workflow task completed after the model turn")
	resp, err := sdk.ResetWorkflowExecution(ctxT(t, 30*time.Second), &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 temporalNS,
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: id, RunId: runID},
		Reason:                    "integration test: reset after a turn",
		WorkflowTaskFinishEventId: finish,
		RequestId:                 fmt.Sprintf("%s-%s-%d", id, runID, time.Now().UnixNano()),
		ResetReapplyExcludeTypes: []enumspb.ResetReapplyExcludeType{
			enumspb.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL, enumspb.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE},
	})
	require.NoError(t, err)
	return resp.GetRunId()
}

// requireResetAnswers sends two inputs to the reset run and checks each is
// answered within a minute with its own answer (not the replaced run's
// answer of that turn), that the model is shown the reset run's
// conversation only, and that `messages` lists kept plus the new exchanges,
// which it returns.
func requireResetAnswers(t *testing.T, h *harness, id, newRun string, kept []string) []string {
	t.Helper()
	desc, err := sdk.DescribeWorkflowExecution(ctxT(t, 10*time.Second), id, "")
	require.NoError(t, err)
	require.Equal(t, newRun, desc.WorkflowExecutionInfo.Execution.RunId, "the reset run is the task's current run")
	outputs := len(kept) / 2
	want := append([]string(nil), kept...)
	for i, q := range []string{"after reset", "and again"} {
		calls := h.model.CallCount()
		_, err := sendUpdate(t, id, text(q))
		require.NoError(t, err)
		waitOutputsWithin(t, id, outputs+i+1, time.Minute)
		want = append(want, q)
		// The call that answered it was shown the reset run's conversation.
		require.Greater(t, h.model.CallCount(), calls)
		last := h.model.Calls()[h.model.CallCount()-1]
		var seen []string
		for _, m := range last.Messages[1:] { // after the instructions
			seen = append(seen, m.Content)
		}
		require.Equal(t, want, seen, "the model sees the reset run's conversation")
		want = append(want, "echo: "+q)
	}
	msgs := messages(t, id, nil)
	require.Equal(t, want, texts(msgs))
	requireSeedOrder(t, msgs)
	return want
}
