package support

import (
	"errors"

	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/agents"
	"github.com/agenttask/agenttask/contract"
)

// badAgentWorkflow starts an agent whose name breaks the rules and returns
// the error's type.
func badAgentWorkflow(ctx workflow.Context) (string, error) {
	_, err := agents.Run(ctx, contract.StartArgs{Agent: contract.AgentSpec{Name: "Bad Name", Model: "test/m"}, Input: &contract.TaskIO{Message: contract.TextParts("hi")}})
	return errType(err), nil
}

// unfitWorkflow asks for a Triage the model never fits and returns the
// TaskError's type and details.
func unfitWorkflow(ctx workflow.Context) ([]string, error) {
	_, err := agents.Run(ctx, contract.StartArgs{
		Agent:  ReplyAgent("test/m"),
		Input:  &contract.TaskIO{Message: contract.TextParts("hi")},
		Output: &contract.OutputSpec{Instructions: "the triage", Schema: TriageSchema},
	})
	var te *agents.TaskError
	if !errors.As(err, &te) {
		return []string{"not a TaskError", err.Error()}, nil
	}
	return []string{te.Type, string(te.Details)}, nil
}
