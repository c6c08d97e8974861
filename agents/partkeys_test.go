package agents_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/agents"
	"github.com/agenttask/agenttask/agenttest"
	"github.com/agenttask/agenttask/contract"
)

// forwardInput is a team's workflow that takes a caller's input as its own
// argument, decodes it from the caller's JSON, and hands it to an agent.
func forwardInput(ctx workflow.Context, raw json.RawMessage, ask bool) error {
	var in contract.TaskIO
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	agent := contract.AgentSpec{Name: "reply", Model: "test/m"}
	if !ask {
		_, err := agents.Run(ctx, contract.StartArgs{Agent: agent, Input: &in})
		return err
	}
	conv, err := agents.Start(ctx, contract.StartArgs{Agent: agent, IdleTimeout: "1m"})
	if err != nil {
		return err
	}
	_, err = conv.Ask(ctx, in)
	return err
}

// A part key a part does not have ("bytes") in an input that reached the
// workflow as JSON is refused by Run, Start and Ask with INVALID_INPUT
// naming it, instead of the input going on without it.
func TestAgentsRefuseAnUnknownPartKey(t *testing.T) {
	withBytes := json.RawMessage(`{"message": [{"mimeType": "text/plain", "text": "see attached", "bytes": [1, 2, 3]}]}`)
	for _, ask := range []bool{false, true} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		model := agenttest.NewModel().Handle(func(r agenttest.Request) agenttest.Reply { return agenttest.Reply{Text: "answered"} })
		agenttest.Register(env, model)
		env.RegisterWorkflow(forwardInput)
		env.ExecuteWorkflow(forwardInput, withBytes, ask)
		require.True(t, env.IsWorkflowCompleted())
		err := env.GetWorkflowError()
		require.Error(t, err, "ask %v: the input went on without its bytes", ask)
		require.Contains(t, err.Error(), "INVALID_INPUT", "ask %v", ask)
		require.Contains(t, err.Error(), `message[0]: "bytes" is not a content-part key`, "ask %v", ask)
		require.Empty(t, model.Requests(), "ask %v: the model was called", ask)
	}
}
