package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// Every task streams (rules.streamAll), one that calls tools included, and
// each model call of a turn is its next step: the broker orders a turn's
// events by it, so a later call is never stale behind an earlier one's
// retries.
func TestEveryModelCallOfATurnIsItsNextStep(t *testing.T) {
	r := newOutputRig(t)
	r.answers = []string{`{"cities":["Nairobi"]}`}
	r.toolRounds = [][]activities.ToolCall{
		{{ID: "1", Name: "save", Arguments: `{"name":"port","value":"Mombasa"}`}},
		{{ID: "2", Name: "save", Arguments: `{"name":"capital","value":"Nairobi"}`}},
	}
	r.env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: shapedAgent(), Input: textInput("find cities"),
		Output: &contract.OutputSpec{Instructions: "List the cities.", Schema: citySchema}}})
	require.NoError(t, r.env.GetWorkflowError())
	require.Len(t, r.turns, 3)
	for i, in := range r.turns {
		require.Equal(t, 1, in.Turn)
		require.Equal(t, i+1, in.Step, "call %d", i)
		require.True(t, in.Stream, "a task with tools and an output streams (not asked to)")
	}
}
