package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/examples/refunds"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/starter"
)

// Activity capabilities and approvals (docs/content.md#approvals). The
// refunds sample (examples/refunds) runs in a worker of its own, on its own
// task queue; the test model asks for refunds as the user's message says
// ("refund ORDER AMOUNT; refund ...") and, once every call has a result,
// answers "done: " and the results (and any input committed meanwhile).

// startRefundsWorker runs the sample's worker on a new task queue.
func startRefundsWorker(t *testing.T) string {
	t.Helper()
	return startRefundsWorkerOn(t, sdk)
}

// startRefundsWorkerOn runs it through c.
func startRefundsWorkerOn(t *testing.T, c client.Client) string {
	t.Helper()
	queue := fmt.Sprintf("payments-%d", queueSeq.Add(1))
	w := sdkworker.New(c, queue, sdkworker.Options{})
	refunds.Register(w)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return queue
}

func refundModel(c testmodel.Call) testmodel.Reply {
	ms := c.Messages
	lastCalls := -1
	for i := range ms {
		if ms[i].Role == "assistant" && len(ms[i].ToolCalls) > 0 {
			lastCalls = i
		}
	}
	if lastCalls >= 0 {
		var results, later []string
		for _, m := range ms[lastCalls+1:] {
			switch m.Role {
			case "tool":
				results = append(results, m.Content)
			case "user":
				if !strings.HasPrefix(m.Content, `<untrusted_data label="already_collected">`) { // what the task saved, recalled before new inputs
					later = append(later, m.Content)
				}
			}
		}
		text := "done: " + strings.Join(results, " | ")
		if len(later) > 0 {
			text += " || also read: " + strings.Join(later, " / ")
		}
		return testmodel.Reply{Text: text}
	}
	last := ms[len(ms)-1].Content
	var calls []testmodel.ToolCall
	for i, line := range strings.Split(last, ";") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "refund" {
			calls = append(calls, testmodel.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "refund",
				Arguments: fmt.Sprintf(`{"order_id":%q,"amount":%s}`, f[1], f[2])})
		}
	}
	if len(calls) == 0 {
		return testmodel.Reply{Text: "echo: " + last}
	}
	return testmodel.Reply{ToolCalls: calls}
}

// refundAgent is an agent with the refund capability; extra sets its keys.
func refundAgent(queue string, extra map[string]any) map[string]any {
	c := map[string]any{
		"name": "refund", "kind": "activity", "activity": "IssueRefund", "taskQueue": queue,
		"description": "Refund an order",
		"parameters": map[string]any{"type": "object", "required": []string{"order_id", "amount"},
			"properties": map[string]any{"order_id": map[string]any{"type": "string"}, "amount": map[string]any{"type": "number"}}},
	}
	for k, v := range extra {
		c[k] = v
	}
	a := agent("a")
	a["capabilities"] = []any{c}
	return a
}

func decide(t *testing.T, id, approvalID string, approve bool, reason string) (contract.Approval, error) {
	t.Helper()
	h, err := sdk.UpdateWorkflow(ctxT(t, 30*time.Second), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: contract.UpdateDecide, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{contract.DecideArgs{ID: approvalID, Approve: &approve, Reason: reason, By: "tester"}},
	})
	if err != nil {
		return contract.Approval{}, err
	}
	var a contract.Approval
	err = h.Get(ctxT(t, 30*time.Second), &a)
	return a, err
}

func approvalsOf(t *testing.T, id string) []contract.Approval {
	t.Helper()
	v, err := sdk.QueryWorkflow(ctxT(t, 10*time.Second), id, "", contract.QueryApprovals)
	require.NoError(t, err)
	var out []contract.Approval
	require.NoError(t, v.Get(&out))
	return out
}

// waitPending waits until the task awaits n approvals.
func waitPending(t *testing.T, id string, n int) contract.Status {
	t.Helper()
	var st contract.Status
	eventually(t, 60*time.Second, fmt.Sprintf("%d pending approvals", n), func() bool {
		v, err := sdk.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "status")
		if err != nil || v.Get(&st) != nil {
			return false
		}
		return st.Approvals == n && st.State == contract.StateAwaitingApproval
	})
	return st
}

func lastText(t *testing.T, id string) string {
	t.Helper()
	ms := messages(t, id, nil)
	return *ms[len(ms)-1].Message[0].Text
}

// activityRuns counts the completed and failed runs of an activity type in
// the task's current run.
func activityRuns(t *testing.T, id, activity string) int {
	t.Helper()
	events := history(t, id, "")
	scheduled := map[int64]bool{}
	n := 0
	for _, e := range events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activity {
			scheduled[e.GetEventId()] = true
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
			n++
		}
		if a := e.GetActivityTaskFailedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
			n++
		}
	}
	return n
}

// The caller's activity runs on its own worker and queue: arguments that do
// not fit the parameters go back to the model, a result reaches the model,
// a non-retryable error does too (its type and message), a retryable one is
// retried.
func TestActivityCapability(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	id := "activity-capability"
	startTask(t, h, id, map[string]any{"agent": refundAgent(queue, nil), "input": text("refund o-1 25")})
	waitOutputs(t, id, 1)
	got := lastText(t, id)
	require.Contains(t, got, "done: {")
	require.Contains(t, got, `"status":"issued"`)
	require.Contains(t, got, `"order_id":"o-1"`)

	_, err := sendUpdate(t, id, text(`refund o-2 "ten"`))
	require.NoError(t, err)
	waitOutputs(t, id, 2)
	require.Contains(t, lastText(t, id), `error: the arguments do not fit "refund"'s parameters`)
	require.Contains(t, lastText(t, id), "/amount")

	_, err = sendUpdate(t, id, text("refund missing-3 10"))
	require.NoError(t, err)
	waitOutputs(t, id, 3)
	require.Contains(t, lastText(t, id), "error: ORDER_NOT_FOUND: ")

	_, err = sendUpdate(t, id, text("refund flaky-4 10"))
	require.NoError(t, err)
	waitOutputs(t, id, 4)
	require.Contains(t, lastText(t, id), `"status":"issued"`, "a retryable failure is retried")
	require.Equal(t, 3, activityRuns(t, id, "IssueRefund"), "the bad arguments never reached the activity")
	require.Nil(t, status(t, id).Error)
	recordHistory(t, id, "", "activity-capability")
}

// An approval waits with no activity and no timer: the history does not
// grow for 30 s. Approved, the call runs and its result reaches the model.
func TestApprovalApprovedAfterAQuietWait(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	id := "approval-approve"
	startTask(t, h, id, map[string]any{"agent": refundAgent(queue, map[string]any{"approval": "always"}), "input": text("refund o-1 25")})
	st := waitPending(t, id, 1)
	require.Equal(t, 0, st.Outputs)
	as := approvalsOf(t, id)
	require.Len(t, as, 1)
	require.Equal(t, "t1.c1", as[0].ID)
	require.Equal(t, "refund", as[0].Capability)
	require.JSONEq(t, `{"order_id":"o-1","amount":25}`, string(as[0].Arguments))
	require.Equal(t, 1, as[0].Turn)
	require.NotEmpty(t, as[0].RequestedAt)
	require.Nil(t, as[0].Decision)
	require.Empty(t, messages(t, id, nil)[1:], "approvals are not entries of messages")

	before := len(history(t, id, ""))
	time.Sleep(30 * time.Second)
	require.Equal(t, before, len(history(t, id, "")), "waiting for a person writes nothing")

	a, err := decide(t, id, "t1.c1", true, "looks fine")
	require.NoError(t, err)
	require.NotNil(t, a.Decision)
	require.True(t, a.Decision.Approve)
	require.Equal(t, "tester", a.Decision.By)
	waitOutputs(t, id, 1)
	require.Contains(t, lastText(t, id), `"status":"issued"`)
	require.Equal(t, 1, activityRuns(t, id, "IssueRefund"))
	recordHistory(t, id, "", "approval-approved")
}

// Denied with a reason: the model reads that a person refused, and why;
// the activity never runs. A second decision, and an unknown ID, are
// refused with nothing written.
func TestApprovalDeniedAndDecideRefusals(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	id := "approval-deny"
	startTask(t, h, id, map[string]any{"agent": refundAgent(queue, map[string]any{"approval": "always"}), "input": text("refund o-1 900")})
	waitPending(t, id, 1)

	before := len(history(t, id, ""))
	_, err := decide(t, id, "t9.c9", true, "")
	require.Equal(t, contract.ErrApprovalNotFound, errType(err), "%v", err)
	require.Equal(t, before, len(history(t, id, "")), "a refused decide writes nothing")

	a, err := decide(t, id, "t1.c1", false, "refunds over 500 need a manager")
	require.NoError(t, err)
	require.False(t, a.Decision.Approve)
	waitOutputs(t, id, 1)
	got := lastText(t, id)
	require.Contains(t, got, "a person refused this call")
	require.Contains(t, got, "refunds over 500 need a manager")
	require.Equal(t, 0, activityRuns(t, id, "IssueRefund"))

	before = len(history(t, id, ""))
	_, err = decide(t, id, "t1.c1", true, "")
	require.Equal(t, contract.ErrApprovalDecided, errType(err), "%v", err)
	require.Equal(t, before, len(history(t, id, "")), "a refused decide writes nothing")
	as := approvalsOf(t, id)
	require.Len(t, as, 1)
	require.False(t, as[0].Decision.Approve, "the first decision stands")
	recordHistory(t, id, "", "approval-denied")
}

// approvalTimeout denies a call nobody decided.
func TestApprovalTimesOut(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	id := "approval-timeout"
	startTask(t, h, id, map[string]any{"agent": refundAgent(queue, map[string]any{"approval": "always", "approvalTimeout": "2s"}), "input": text("refund o-1 30")})
	waitOutputs(t, id, 1)
	require.Contains(t, lastText(t, id), contract.ReasonApprovalTimedOut)
	as := approvalsOf(t, id)
	require.Len(t, as, 1)
	require.Equal(t, contract.ReasonApprovalTimedOut, as[0].Decision.Reason)
	require.Equal(t, 0, activityRuns(t, id, "IssueRefund"))
	recordHistory(t, id, "", "approval-timeout")
}

// A condition lets small refunds through without asking. With two calls in
// one response, the small one runs at once and the large one waits; an
// input sent meanwhile queues and commits with the next model call.
func TestApprovalConditionTwoCallsAndAnInputWhileWaiting(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	id := "approval-condition"
	startTask(t, h, id, map[string]any{"agent": refundAgent(queue, map[string]any{"approvalCondition": "args.amount > 100"}), "input": text("refund o-1 20")})
	waitOutputs(t, id, 1)
	require.Contains(t, lastText(t, id), `"status":"issued"`, "a small refund needs nobody")
	require.Empty(t, approvalsOf(t, id))

	_, err := sendUpdate(t, id, text("refund o-2 30; refund o-3 500"))
	require.NoError(t, err)
	st := waitPending(t, id, 1)
	require.Equal(t, 1, st.Outputs)
	require.Equal(t, 2, activityRuns(t, id, "IssueRefund"), "the small refund of the pair ran without waiting")
	as := approvalsOf(t, id)
	require.Len(t, as, 1)
	require.Equal(t, "t2.c2", as[0].ID, "the turn's second call")

	r, err := sendUpdate(t, id, text("and hurry"))
	require.NoError(t, err)
	require.NotEmpty(t, r.ReceivedAt)
	require.Equal(t, 1, status(t, id).Queued, "an input sent while waiting queues")

	_, err = decide(t, id, "t2.c2", true, "")
	require.NoError(t, err)
	waitOutputs(t, id, 2)
	got := lastText(t, id)
	require.Equal(t, 2, strings.Count(got, `"status":"issued"`), "both results, in order: %s", got)
	require.Less(t, strings.Index(got, `"o-2"`), strings.Index(got, `"o-3"`))
	require.Contains(t, got, "also read: and hurry", "the input committed with the next model call")
	ms := messages(t, id, nil)
	require.Len(t, ms, 5, "two inputs, the queued one, two outputs")
	requireSeedOrder(t, ms)
	recordHistory(t, id, "", "approval-condition")
}

// A pending approval survives continue-as-new and a worker SIGKILL; a
// decision sent while no worker runs is applied when one returns.
func TestApprovalAcrossContinueAsNewAndWorkerKill(t *testing.T) {
	h := newHarness(t)
	first := startWorkerProcess(t, h)
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	id := "approval-durable"
	firstRun := startTask(t, h, id, map[string]any{"agent": refundAgent(queue, map[string]any{"approval": "always"}),
		"continueAsNewEvents": 100, "input": text("hello")})
	waitOutputs(t, id, 1)
	_, err := sendUpdate(t, id, text("refund o-1 70"))
	require.NoError(t, err)
	waitPending(t, id, 1)
	// Inputs sent while waiting grow the history until the run continues
	// as new, carrying the waiting turn.
	for i := 0; status(t, id).Run == 1; i++ {
		// Each signal adds at least its own event (more when it has a
		// workflow task to itself); the queue holds 100.
		require.Less(t, i, 90, "no continue-as-new while waiting")
		require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text(fmt.Sprint("note ", i))))
		time.Sleep(50 * time.Millisecond)
	}
	st := waitPending(t, id, 1)
	require.GreaterOrEqual(t, st.Run, 2)
	require.Equal(t, "t2.c1", approvalsOf(t, id)[0].ID)

	require.NoError(t, first.Process.Kill()) // SIGKILL
	_ = first.Wait()
	decided := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		approve := true
		u, err := sdk.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: id, UpdateName: contract.UpdateDecide, WaitForStage: client.WorkflowUpdateStageCompleted,
			Args: []any{contract.DecideArgs{ID: "t2.c1", Approve: &approve, By: "night shift"}},
		})
		if err == nil {
			err = u.Get(ctx, nil)
		}
		decided <- err
	}()
	time.Sleep(2 * time.Second) // the decision waits for a worker
	startWorkerProcess(t, h)
	require.NoError(t, <-decided)
	st = waitOutputs(t, id, 2)
	require.Nil(t, st.Error)
	got := lastText(t, id)
	require.Contains(t, got, `"status":"issued"`)
	require.Contains(t, got, "also read: note 0", "inputs sent while waiting commit with the next call")
	as := approvalsOf(t, id)
	require.Equal(t, "night shift", as[0].Decision.By)
	recordHistory(t, id, "", "approval-across-runs")
	recordHistory(t, id, firstRun.GetRunID(), "approval-paused-first-run") // continued as new while waiting
}

// cancel-turn and close deny pending approvals.
func TestCancelTurnAndCloseDenyPendingApprovals(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	id := "approval-cancel-close"
	run := startTask(t, h, id, map[string]any{"agent": refundAgent(queue, map[string]any{"approval": "always"}), "input": text("refund o-1 5")})
	waitPending(t, id, 1)
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "cancel-turn", nil))
	eventually(t, 30*time.Second, "the approval denied", func() bool {
		as := approvalsOf(t, id)
		return len(as) == 1 && as[0].Decision != nil
	})
	require.Equal(t, contract.ReasonTurnCanceled, approvalsOf(t, id)[0].Decision.Reason)

	_, err := sendUpdate(t, id, text("refund o-2 6"))
	require.NoError(t, err)
	waitPending(t, id, 1)
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	var res contract.Result
	require.NoError(t, run.Get(ctxT(t, 60*time.Second), &res))
	require.Equal(t, contract.EndedByClose, res.EndedBy)
	as := approvalsOf(t, id)
	require.Equal(t, contract.ReasonTaskClosed, as[len(as)-1].Decision.Reason)
	require.Contains(t, lastText(t, id), contract.ReasonTaskClosed, "the turn went on with the denial")
	require.Equal(t, 0, activityRuns(t, id, "IssueRefund"))
}

// A task terminated while waiting for a person is rescued: the rescue asks
// again, and the Web UI's current details list the pending approval with
// its arguments.
func TestRescuedTaskAsksForApprovalAgain(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	id := "approval-rescue"
	startTask(t, h, id, map[string]any{"agent": refundAgent(queue, map[string]any{"approval": "always"}), "input": text("refund o-9 45")})
	waitPending(t, id, 1)
	require.Contains(t, currentDetails(t, id), `awaiting approval **t1.c1** · `+"`refund`"+` · {"order_id":"o-9","amount":45}`)
	require.NoError(t, sdk.TerminateWorkflow(ctxT(t, 5*time.Second), id, "", "an operator stopped it"))

	newID, err := h.tasks.Rescue(ctxT(t, 30*time.Second), id, nil, starter.StartOptions{TaskID: id + "-rescued"})
	require.NoError(t, err)
	waitPending(t, newID, 1)
	as := approvalsOf(t, newID)
	require.Len(t, as, 1)
	require.JSONEq(t, `{"order_id":"o-9","amount":45}`, string(as[0].Arguments))
	_, err = decide(t, newID, as[0].ID, true, "")
	require.NoError(t, err)
	waitOutputs(t, newID, 1)
	require.Contains(t, lastText(t, newID), `"status":"issued"`)
	require.NotContains(t, currentDetails(t, newID), "awaiting approval")
}

// currentDetails is the text the Web UI shows for the task now.
func currentDetails(t *testing.T, id string) string {
	t.Helper()
	v, err := sdk.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "__temporal_workflow_metadata")
	require.NoError(t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	return md.GetCurrentDetails()
}
