package agents_test

import (
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/agents"
	"github.com/agenttask/agenttask/agenttest"
	"github.com/agenttask/agenttask/contract"
)

// Triage is a team's workflow: an agent task, run as a child workflow,
// says which team handles a ticket.
func Triage(ctx workflow.Context, ticket string) (string, error) {
	res, err := agents.Run(ctx, contract.StartArgs{
		Agent: contract.AgentSpec{
			Name:         "triage",
			Model:        "openai/gpt-4o-mini",
			Instructions: "Answer with the one team that handles the ticket: billing, shipping or support.",
		},
		Mode:  contract.ModeSingle,
		Input: &contract.TaskIO{Message: agents.Text(ticket).Message},
	})
	if err != nil {
		return "", err
	}
	return res.Output, nil
}

// agents.Run from a workflow, here run in the SDK's test environment with
// a scripted model (package agenttest) in place of the provider.
func ExampleRun() {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	agenttest.Register(env, agenttest.NewModel(agenttest.Reply{Text: "billing"}))
	env.RegisterWorkflow(Triage)

	env.ExecuteWorkflow(Triage, "I was charged twice for order 1042.")
	var team string
	if err := env.GetWorkflowResult(&team); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(team)
	// Output: billing
}

// agents.Text is an input of one text part, the text whole.
func ExampleText() {
	in := agents.Text("Where is my parcel?")
	fmt.Println(len(in.Message), in.Message[0].MimeType, *in.Message[0].Text)
	// Output: 1 text/plain Where is my parcel?
}
