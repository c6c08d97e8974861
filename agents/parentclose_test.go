package agents_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/agents"
	"github.com/agenttask/agenttask/agenttest"
	"github.com/agenttask/agenttask/contract"
)

// openConversation starts a conversation, has its first input answered
// and ends, handing the task ID on, as a workflow that opens a
// conversation for someone else does. policy 0 leaves
// WithParentClosePolicy out. The conversation asks for a shaped output,
// so its own end (the idle timeout) shows as a shaping call to the model.
func openConversation(ctx workflow.Context, policy int32) (string, error) {
	var opts []agents.Option
	if policy != 0 {
		opts = append(opts, agents.WithParentClosePolicy(enumspb.ParentClosePolicy(policy)))
	}
	conv, err := agents.Start(ctx, contract.StartArgs{
		Agent:       contract.AgentSpec{Name: "reply", Model: "test/m"},
		IdleTimeout: "1h",
		Output:      &contract.OutputSpec{Instructions: "the reply", Schema: json.RawMessage(`{"type":"object","properties":{"reply":{"type":"string"}},"required":["reply"]}`)},
	}, opts...)
	if err != nil {
		return "", err
	}
	if _, err := conv.Ask(ctx, agents.Text("hello")); err != nil {
		return "", err
	}
	return conv.TaskID, nil
}

// runOpener runs openConversation and returns what the model was asked:
// "answer" for an input, "shape" for the shaping pass at the
// conversation's end.
func runOpener(t *testing.T, policy enumspb.ParentClosePolicy) []string {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	model := agenttest.NewModel().Handle(func(r agenttest.Request) agenttest.Reply {
		if r.Schema != nil {
			return agenttest.Reply{JSON: map[string]string{"reply": "hi"}}
		}
		return agenttest.Reply{Text: "hi: " + r.LastUser()}
	})
	agenttest.Register(env, model)
	env.RegisterWorkflow(openConversation)
	env.ExecuteWorkflow(openConversation, int32(policy))
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var id string
	require.NoError(t, env.GetWorkflowResult(&id))
	require.True(t, strings.Contains(id, ".reply."), id)
	var asked []string
	for _, r := range model.Requests() {
		if r.Schema != nil {
			asked = append(asked, "shape")
		} else {
			asked = append(asked, "answer")
		}
	}
	return asked
}

// By default the conversation outlives the workflow that started it: once
// its parent has ended it runs on to its own end (here its idle timeout,
// then its shaping pass), instead of being terminated with the parent.
func TestStartedConversationOutlivesItsParent(t *testing.T) {
	require.Equal(t, []string{"answer", "shape"}, runOpener(t, enumspb.PARENT_CLOSE_POLICY_UNSPECIFIED),
		"the conversation did not reach its own end: it was ended with its parent")
}

// WithParentClosePolicy(TERMINATE) ends it with its parent: it never
// reaches its own end.
func TestStartWithTerminateEndsTheConversationWithItsParent(t *testing.T) {
	require.Equal(t, []string{"answer"}, runOpener(t, enumspb.PARENT_CLOSE_POLICY_TERMINATE))
}
