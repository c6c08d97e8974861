// Package agenttest runs a team's workflows that call agents (package
// agents) in the SDK's test environment (go.temporal.io/sdk/testsuite)
// with a fake model, without any server:
//
//	env := suite.NewTestWorkflowEnvironment()
//	model := agenttest.NewModel(agenttest.Reply{Text: "..."}, agenttest.Reply{JSON: Triage{...}})
//	agenttest.Register(env, model)
//	env.RegisterWorkflow(TriageTicket)
//	env.ExecuteWorkflow(TriageTicket, ticket)
//
// AgentTask and its activities run for real, over an in-memory transcript
// (mem://); only the model is fake. Agents with a mount are not supported.
package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/agenttask/agenttask/agents"
	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/transcript"
	"github.com/agenttask/agenttask/internal/workerkit"
	"github.com/agenttask/agenttask/internal/workflows"
)

// OutputModel is the model the shaping pass of StartArgs.Output uses unless
// the output names one: the fake model answers it too (a Reply with JSON).
const OutputModel = "agenttest/shape"

// Register registers AgentTask, the runtime's activities (the model being
// model) and the activity agents.Ask uses on env.
func Register(env *testsuite.TestWorkflowEnvironment, model *Model) {
	store, err := transcript.OpenWith(context.Background(), "mem://", nil)
	if err != nil {
		panic(fmt.Sprintf("agenttest: an in-memory transcript store: %v", err))
	}
	tr := transcriptFor{inner: workerkit.TranscriptAdapter{Store: store}}
	workerkit.Register(env, &workflows.Workflows{Transcript: tr}, &activities.Activities{
		Models:      modelClient{model},
		Transcript:  tr,
		Files:       mount.NewStoreWith(nil),
		OutputModel: OutputModel,
	})
	env.RegisterActivityWithOptions((&asker{env: env}).ask, activity.RegisterOptions{Name: agents.AskActivityName})
}

// modelClient is the runtime's model client over a Model.
type modelClient struct{ m *Model }

func (c modelClient) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return c.m.complete(ctx, req)
}

// asker is agents.Ask's activity in the test environment, which has no
// client: it sends the ask update with the environment's UpdateWorkflowByID,
// on the environment's own loop (a callback), and waits for the outcome.
type asker struct {
	env *testsuite.TestWorkflowEnvironment
}

type outcome struct {
	res contract.AskResult
	err error
}

func (a *asker) ask(ctx context.Context, req agents.AskRequest) (contract.AskResult, error) {
	if req.Refused != "" { // as agents.AskActivity: refused before it is sent
		return contract.AskResult{}, temporal.NewNonRetryableApplicationError(req.Refused, contract.ErrInvalidInput, nil)
	}
	info := activity.GetInfo(ctx)
	id := fmt.Sprintf("ask-%s-%s", info.WorkflowExecution.RunID, info.ActivityID)
	done := make(chan outcome, 1)
	cb := &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { done <- outcome{err: err} },
		OnComplete: func(v any, err error) {
			var o outcome
			if o.err = err; err == nil {
				o.err = convert(v, &o.res)
			}
			done <- o
		},
	}
	a.env.RegisterDelayedCallback(func() {
		if err := a.env.UpdateWorkflowByID(req.TaskID, contract.UpdateAsk, id, cb, req.Input); err != nil {
			done <- outcome{err: err}
		}
	}, 0)
	select {
	case o := <-done:
		return o.res, final(o.err)
	case <-ctx.Done():
		return contract.AskResult{}, ctx.Err()
	}
}

// convert copies the handler's result (a Go value in the test
// environment) into out.
func convert(v any, out *contract.AskResult) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// final makes the task's refusals final, with their types, as the real
// activity does.
func final(err error) error {
	if err == nil {
		return nil
	}
	var ce *contract.Error
	if errors.As(err, &ce) {
		return temporal.NewNonRetryableApplicationError(ce.Message, ce.Type, nil)
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return temporal.NewNonRetryableApplicationError(ae.Message(), ae.Type(), nil)
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrInternal, nil)
}
