package main

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The baseline: the least a Temporal turn can do. BareLoop receives a
// signal, runs one trivial activity and appends its result to a list that a
// query serves; it is what AgentTask does per turn minus the product.
const (
	bareWorkflow = "BareLoop"
	bareActivity = "BareActivity" // BareAsk's (load.go): a string in, the same out
	bareAnswer   = "BareAnswer"   // BareLoop's: an input in, an answer out
	bareQueue    = "bench-bare"
	bareSignal   = "input"    // arg: a bareIO, the same document AgentTask's input signal carries
	bareQuery    = "messages" // optional arg barePage; returns []bareIO
)

// bareIO is an input or an answer as seed 000 writes it: a message of
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

// BareLoop loops forever: signal in, one activity, its answer appended.
func BareLoop(ctx workflow.Context) error {
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
		if err := workflow.ExecuteActivity(actx, bareAnswer, in).Get(ctx, &out); err != nil {
			return err
		}
		msgs = append(msgs, out)
	}
}

// BareActivity returns its input.
func BareActivity(_ context.Context, in string) (string, error) { return in, nil }

// BareAnswer answers as the test model's echo does: "echo: " and the
// input's text.
func BareAnswer(_ context.Context, in bareIO) (bareIO, error) {
	text := ""
	for _, p := range in.Message {
		text += p.Text
	}
	return bareIO{Message: []barePart{{MimeType: "text/plain", Text: "echo: " + text}}}, nil
}

func registerBare(r sdkworker.Registry) {
	r.RegisterWorkflowWithOptions(BareLoop, workflow.RegisterOptions{Name: bareWorkflow})
	r.RegisterActivityWithOptions(BareActivity, activity.RegisterOptions{Name: bareActivity})
	r.RegisterActivityWithOptions(BareAnswer, activity.RegisterOptions{Name: bareAnswer})
}
