package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

// listedBy reports the running task IDs an AgentState query finds.
func listedBy(t *testing.T, state string) []string {
	t.Helper()
	res, err := sdk.ListWorkflow(ctxT(t, 5*time.Second), &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: temporalNS, Query: `AgentState = "` + state + `" AND ExecutionStatus = "Running"`,
	})
	require.NoError(t, err)
	var ids []string
	for _, e := range res.GetExecutions() {
		ids = append(ids, e.GetExecution().GetWorkflowId())
	}
	return ids
}

func listed(t *testing.T, state, id string) func() bool {
	return func() bool {
		for _, got := range listedBy(t, state) {
			if got == id {
				return true
			}
		}
		return false
	}
}

// A task started by the Go client is listed by AgentState: active, then
// awaiting_approval while a call waits for a person, then active again;
// each change is one upsert, and turns that change nothing write none. Its
// current details and activity summaries say what it does.
func TestAgentStateListsTasksWaitingForAPerson(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	var spec contract.AgentSpec
	raw, _ := json.Marshal(refundAgent(queue, map[string]any{"approvalCondition": "args.amount > 100"}))
	require.NoError(t, json.Unmarshal(raw, &spec))
	id, err := h.tasks.Start(ctxT(t, 10*time.Second), contract.StartArgs{Agent: spec, Input: &contract.TaskIO{Message: contract.TextParts("refund o-1 20")}},
		starter.StartOptions{TaskID: "operator-listed"})
	require.NoError(t, err)
	waitOutputs(t, id, 1)
	eventually(t, time.Minute, "listed as active", listed(t, contract.AgentStateActive, id))

	_, err = sendUpdate(t, id, text("refund o-2 500"))
	require.NoError(t, err)
	waitPending(t, id, 1)
	eventually(t, time.Minute, "listed as awaiting_approval", listed(t, contract.AgentStateAwaitingApproval, id))
	details := currentDetails(t, id)
	require.Contains(t, details, "**awaiting_approval**")
	require.Contains(t, details, "last input: refund o-2 500")
	require.Contains(t, details, `last output: done: {"refund_id"`)
	require.Contains(t, details, "awaiting approval **t2.c1**")

	_, err = decide(t, id, "t2.c1", true, "")
	require.NoError(t, err)
	waitOutputs(t, id, 2)
	eventually(t, time.Minute, "listed as active again", listed(t, contract.AgentStateActive, id))
	require.NotContains(t, listedBy(t, contract.AgentStateAwaitingApproval), id)

	upserts, summaries := 0, map[string]bool{}
	for _, e := range history(t, id, "") {
		if a := e.GetUpsertWorkflowSearchAttributesEventAttributes(); a != nil && a.GetSearchAttributes().GetIndexedFields()["AgentState"] != nil {
			upserts++ // (GetVersion upserts TemporalChangeVersion at the start of every run)
		}
		if e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
			var s string
			if p := e.GetUserMetadata().GetSummary(); p != nil {
				_ = json.Unmarshal(p.GetData(), &s)
			}
			summaries[s] = true
		}
	}
	require.Equal(t, 2, upserts, "to awaiting_approval and back, nothing per turn")
	require.True(t, summaries["model test/echo · turn 1"], "%v", summaries)
	require.True(t, summaries["model test/echo · turn 2 · round 2"], "%v", summaries)
	require.True(t, summaries["capability refund"], "%v", summaries)
	recordHistory(t, id, "", "agent-state-upserts")

	// A task started without the attribute never upserts it.
	startTask(t, h, "operator-unlisted", map[string]any{"agent": agent("a"), "input": text("hi")})
	waitOutputs(t, "operator-unlisted", 1)
	for _, e := range history(t, "operator-unlisted", "") {
		require.Nil(t, e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()["AgentState"])
	}
	require.False(t, strings.Contains(currentDetails(t, "operator-unlisted"), "awaiting"))
}
