package support

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/agenttask/agenttask/agents"
	"github.com/agenttask/agenttask/agenttest"
)

// triageModel answers as a model would: the triage agent looks the
// customer up, then names priority and team from the plan it read; the
// shaping pass gives the JSON; the reply agent answers each input.
func triageModel(r agenttest.Request) agenttest.Reply {
	last := r.Messages[len(r.Messages)-1]
	switch {
	case r.Schema != nil: // the shaping pass (StartArgs.Output)
		all := ""
		for _, m := range r.Messages {
			all += m.Content
		}
		if strings.Contains(all, "enterprise") {
			return agenttest.Reply{JSON: Triage{Priority: "urgent", Team: "billing"}}
		}
		return agenttest.Reply{JSON: Triage{Priority: "normal", Team: "billing"}}
	case last.Role == "tool":
		return agenttest.Reply{Text: "Plan read: " + last.Content + ". This is a billing matter."}
	case containsTool(r.Tools, "lookup_customer"):
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{Name: "lookup_customer", Arguments: `{"customer_id":"ent-42"}`}}}
	default:
		return agenttest.Reply{Text: "reply to: " + r.LastUser()}
	}
}

func containsTool(tools []string, name string) bool {
	for _, t := range tools {
		if t == name {
			return true
		}
	}
	return false
}

func newEnv(model *agenttest.Model) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	agenttest.Register(env, model)
	w := &Workflows{Model: "test/model"}
	w.Register(env, env)
	return env
}

var ticket = Ticket{ID: "T-1", CustomerID: "ent-42", Subject: "Invoice twice", Body: "I was charged twice this month."}

// The whole workflow runs in the SDK's test environment: AgentTask as a
// child (its activity capability calling LookupCustomer), the shaped result
// decoded into Triage, and a follow-up answered by a conversation child.
func TestTriageTicket(t *testing.T) {
	model := agenttest.NewModel().Handle(triageModel)
	env := newEnv(model)
	env.ExecuteWorkflow(WorkflowName, ticket)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out Outcome
	require.NoError(t, env.GetWorkflowResult(&out))

	require.Equal(t, Triage{Priority: "urgent", Team: "billing"}, out.Triage, "decoded from the shaped JSON")
	require.Equal(t, "reply to: Draft the reply: the ticket is urgent priority and goes to the billing team.", out.Reply)
	require.True(t, strings.HasPrefix(out.TriageTaskID, "default-test-workflow-id.triage."), out.TriageTaskID)
	require.True(t, strings.HasPrefix(out.ReplyTaskID, "default-test-workflow-id.reply."), out.ReplyTaskID)
	require.NotEqual(t, out.TriageTaskID, out.ReplyTaskID)
	require.Positive(t, out.Usage.InputTokens)

	// What the model was sent: the tool's result is the activity's JSON.
	var sawTool bool
	for _, r := range model.Requests() {
		for _, m := range r.Messages {
			if m.Role == "tool" {
				sawTool = true
				require.Contains(t, m.Content, `"plan":"enterprise"`)
			}
		}
	}
	require.True(t, sawTool, "LookupCustomer's result reached the model")
}

// A start the runtime refuses fails fast, before any child, as a typed
// error the workflow can switch on.
func TestRunRefusesBadArgs(t *testing.T) {
	model := agenttest.NewModel()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	agenttest.Register(env, model)
	env.RegisterWorkflow(badAgentWorkflow)
	env.ExecuteWorkflow(badAgentWorkflow)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var typ string
	require.NoError(t, env.GetWorkflowResult(&typ))
	require.Equal(t, "INVALID_INPUT", typ)
	require.Empty(t, model.Requests(), "refused before any model call")
}

// The model failing for good comes back as a *agents.TaskError in the
// calling workflow: here the shaping pass never fits the schema
// (OUTPUT_UNFIT, with its details).
func TestRunFailureIsTyped(t *testing.T) {
	model := agenttest.NewModel().Handle(func(r agenttest.Request) agenttest.Reply {
		if r.Schema != nil {
			return agenttest.Reply{JSON: map[string]any{"priority": "whenever"}}
		}
		return agenttest.Reply{Text: "no idea"}
	})
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	agenttest.Register(env, model)
	env.RegisterWorkflow(unfitWorkflow)
	env.ExecuteWorkflow(unfitWorkflow)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var got []string
	require.NoError(t, env.GetWorkflowResult(&got))
	require.Equal(t, "OUTPUT_UNFIT", got[0])
	require.Contains(t, got[1], "priority", "the details carry the violations")
}

func errType(err error) string {
	var re *agents.RefusedError
	if errors.As(err, &re) {
		return re.Type
	}
	var te *agents.TaskError
	if errors.As(err, &te) {
		return te.Type
	}
	return ""
}
