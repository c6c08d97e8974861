package agenttest_test

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

// greet is the workflow under test: one agent task, one input.
func greet(ctx workflow.Context, name string) (string, error) {
	res, err := agents.Run(ctx, contract.StartArgs{
		Agent: contract.AgentSpec{Name: "greeter", Model: "test/model", Instructions: "Greet the user."},
		Mode:  contract.ModeSingle,
		Input: &contract.TaskIO{Message: agents.Text("I am " + name).Message},
	})
	if err != nil {
		return "", err
	}
	return res.Output, nil
}

// A scripted model answers the task's model call with its first reply;
// Requests shows what the runtime sent it.
func ExampleNewModel() {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	model := agenttest.NewModel(agenttest.Reply{Text: "Hello, Ada!"})
	agenttest.Register(env, model)
	env.RegisterWorkflow(greet)

	env.ExecuteWorkflow(greet, "Ada")
	var reply string
	if err := env.GetWorkflowResult(&reply); err != nil {
		fmt.Println(err)
		return
	}
	req := model.Requests()[0]
	fmt.Println(reply)
	fmt.Println(req.Model, "was asked:", req.LastUser())
	// Output:
	// Hello, Ada!
	// test/model was asked: I am Ada
}

// Past its script the model answers with its handler: here a reply built
// from the request.
func ExampleModel_Handle() {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	model := agenttest.NewModel().Handle(func(r agenttest.Request) agenttest.Reply {
		return agenttest.Reply{Text: "you said: " + r.LastUser()}
	})
	agenttest.Register(env, model)
	env.RegisterWorkflow(greet)

	env.ExecuteWorkflow(greet, "Grace")
	var reply string
	if err := env.GetWorkflowResult(&reply); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reply)
	// Output: you said: I am Grace
}
