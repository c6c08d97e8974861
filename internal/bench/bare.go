package main

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The baseline: the least a Temporal agent turn can do. BareLoop receives
// a signal, runs one activity that asks the model (bareModel, the same
// endpoint AgentTask's turns call, with the conversation so far) and
// appends its answer to a list that a
// query serves; it is what AgentTask does per turn minus the product.
const (
	bareWorkflow        = "BareLoop"            // arg: the activity each turn runs (bareAnswer or bareAnswerInProcess)
	bareActivity        = "BareActivity"        // BareAsk's (load.go): a string in, the model's answer out
	bareAnswer          = "BareAnswer"          // BareLoop's: an input in, the model's answer out
	bareAnswerInProcess = "BareAnswerInProcess" // the same answer made in process, no model call: the baseline until 2026-12-03
	bareQueue           = "bench-bare"
	bareSignal          = "input"    // arg: a bareIO, the same document AgentTask's input signal carries
	bareQuery           = "messages" // optional arg barePage; returns []bareIO
)

// bareIO is an input or an answer as docs/contract.md writes it: a message of
// content parts. BareLoop carries what AgentTask carries of the caller's
// data (the same input document in, an answer of the same text out), so
// the bytes the two add per turn differ only by what the runtime adds.
type bareIO struct {
	Message []barePart `json:"message"`
}

type barePart struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
}

// barePage mirrors workflows.MessagesPage so both sides are polled alike.
type barePage struct {
	After int `json:"after"`
	Limit int `json:"limit"`
}

// BareLoop loops forever: signal in, one activity (answer), its answer
// appended.
func BareLoop(ctx workflow.Context, answer string) error {
	var msgs []bareIO
	err := workflow.SetQueryHandler(ctx, bareQuery, func(page *barePage) ([]bareIO, error) {
		from, to := 0, len(msgs)
		if page != nil {
			from = min(max(page.After, 0), len(msgs))
			if page.Limit > 0 {
				to = min(to, from+page.Limit)
			}
		}
		return msgs[from:to], nil
	})
	if err != nil {
		return err
	}
	inputs := workflow.GetSignalChannel(ctx, bareSignal)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for {
		var in bareIO
		inputs.Receive(ctx, &in)
		var out bareIO
		if err := workflow.ExecuteActivity(actx, answer, in).Get(ctx, &out); err != nil {
			return err
		}
		msgs = append(msgs, out)
	}
}

// bareActivities are the baselines' activities, on the model they ask.
type bareActivities struct{ model bareModel }

// BareActivity returns the model's answer to its input.
func (a bareActivities) BareActivity(ctx context.Context, in string) (string, error) {
	return a.model.ask(ctx, activity.GetInfo(ctx).WorkflowExecution.ID, in)
}

// BareAnswer returns the model's answer to the input's text as a message.
func (a bareActivities) BareAnswer(ctx context.Context, in bareIO) (bareIO, error) {
	text, err := a.model.ask(ctx, activity.GetInfo(ctx).WorkflowExecution.ID, textOf(in))
	if err != nil {
		return bareIO{}, err
	}
	return bareIO{Message: []barePart{{MimeType: "text/plain", Text: text}}}, nil
}

// BareAnswerInProcess answers as the echo model does ("echo: " and the
// input's text) without asking it.
func BareAnswerInProcess(_ context.Context, in bareIO) (bareIO, error) {
	return bareIO{Message: []barePart{{MimeType: "text/plain", Text: "echo: " + textOf(in)}}}, nil
}

func textOf(in bareIO) string {
	text := ""
	for _, p := range in.Message {
		text += p.Text
	}
	return text
}

func registerBare(r sdkworker.Registry, model bareModel) {
	a := bareActivities{model: model}
	r.RegisterWorkflowWithOptions(BareLoop, workflow.RegisterOptions{Name: bareWorkflow})
	r.RegisterActivityWithOptions(a.BareActivity, activity.RegisterOptions{Name: bareActivity})
	r.RegisterActivityWithOptions(a.BareAnswer, activity.RegisterOptions{Name: bareAnswer})
	r.RegisterActivityWithOptions(BareAnswerInProcess, activity.RegisterOptions{Name: bareAnswerInProcess})
}
