package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// One call starts a task and gets its answer (update-with-start of ask): the
// history comes first as committed entries, the JSON answer is checked
// against the agent's schema (a violation goes back to the model), and
// topP and reasoningEffort reach the request.
func TestAskWithStartAnswersOnce(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if c.Seq == 1 {
			return testmodel.Reply{Text: `{"reply": 7}`} // does not fit: reply is a string
		}
		return testmodel.Reply{Text: `{"reply": "Pole sana, Amina."}`}
	})
	spec := agent("support-reply")
	spec["json"] = true
	spec["schema"] = map[string]any{"type": "object", "properties": map[string]any{"reply": map[string]any{"type": "string"}}, "required": []any{"reply"}}
	spec["topP"] = 0.5
	spec["reasoningEffort"] = "low"
	args := map[string]any{"agent": spec, "history": []any{
		map[string]any{"role": "user", "content": "Hello"},
		map[string]any{"role": "assistant", "content": "Habari. How can I help?"},
	}}
	id := "ask-with-start"
	op := sdk.NewWithStartWorkflowOperation(client.StartWorkflowOptions{ID: id, TaskQueue: h.queue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL}, "AgentTask", args)
	handle, err := sdk.UpdateWithStartWorkflow(ctxT(t, 30*time.Second), client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: op,
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: contract.UpdateAsk, Args: []any{text("My order is late.")},
			WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	require.NoError(t, err)
	var res contract.AskResult
	require.NoError(t, handle.Get(ctxT(t, 30*time.Second), &res))
	require.Equal(t, `{"reply": "Pole sana, Amina."}`, *res.Output.Message[0].Text)
	require.NotEmpty(t, res.Output.CommittedAt)
	require.NotEmpty(t, res.ReceivedAt)
	require.Equal(t, "end", res.Turn.StopReason)
	require.Equal(t, 2, h.model.CallCount(), "the violation went back to the model once")

	first := h.model.Calls()[0]
	var roles, contents []string
	for _, m := range first.Messages {
		roles, contents = append(roles, m.Role), append(contents, m.Content)
	}
	require.Equal(t, []string{"system", "user", "assistant", "user"}, roles)
	require.Equal(t, []string{"Hello", "Habari. How can I help?", "My order is late."}, contents[1:])
	var raw map[string]any
	require.NoError(t, json.Unmarshal(first.Raw, &raw))
	require.Equal(t, 0.5, raw["top_p"])
	require.Equal(t, "low", raw["reasoning_effort"])
	require.Contains(t, string(first.Raw), `"json_schema"`)
	require.Contains(t, h.model.Calls()[1].Messages[len(h.model.Calls()[1].Messages)-1].Content, "/reply")

	msgs := messages(t, id, nil)
	require.Equal(t, []string{"input", "output", "input", "output"}, types(msgs))
	require.Equal(t, []string{"Hello", "Habari. How can I help?", "My order is late.", `{"reply": "Pole sana, Amina."}`}, texts(msgs))
	requireSeedOrder(t, msgs)

	// A second ask on the same task answers its own input.
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply { return testmodel.Reply{Text: `{"reply": "second"}`} })
	uh, err := sdk.UpdateWorkflow(ctxT(t, 30*time.Second), client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: contract.UpdateAsk,
		Args: []any{text("And now?")}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, uh.Get(ctxT(t, 30*time.Second), &res))
	require.Equal(t, `{"reply": "second"}`, *res.Output.Message[0].Text)

	// A bad history is refused at start.
	bad := map[string]any{"agent": agent("a"), "history": []any{map[string]any{"role": "system", "content": "x"}}}
	run := startTask(t, h, "ask-bad-history", bad)
	err = run.Get(ctxT(t, 30*time.Second), nil)
	require.Equal(t, contract.ErrInvalidInput, errType(err))
	require.True(t, strings.Contains(err.Error(), "history[0].role"), "%v", err)
	recordHistory(t, id, "", "ask-with-start")
}

// An ask whose turn is canceled fails with TURN_CANCELED; the input stays
// committed.
func TestAskOfACanceledTurnFails(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.Hold()
	id := "ask-canceled"
	startTask(t, h, id, map[string]any{"agent": agent("a")})
	done := make(chan error, 1)
	go func() {
		uh, err := sdk.UpdateWorkflow(ctxT(t, 30*time.Second), client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: contract.UpdateAsk,
			Args: []any{text("slow question")}, WaitForStage: client.WorkflowUpdateStageAccepted})
		if err != nil {
			done <- err
			return
		}
		done <- uh.Get(ctxT(t, 30*time.Second), nil)
	}()
	require.NoError(t, h.model.WaitForCalls(ctxT(t, time.Minute), 1))
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "cancel-turn", nil))
	err := <-done
	require.Equal(t, contract.ErrTurnCanceled, errType(err), "%v", err)
	h.model.Release()
	require.Equal(t, []string{"input"}, types(messages(t, id, nil)))
}
