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
	bareActivity = "BareActivity"
	bareQueue    = "bench-bare"
	bareSignal   = "input"    // arg: a string
	bareQuery    = "messages" // optional arg barePage; returns []string
)

// barePage mirrors workflows.MessagesPage so both sides are polled alike.
type barePage struct {
	After int `json:"after"`
	Limit int `json:"limit"`
}

// BareLoop loops forever: signal in, one activity, result appended.
func BareLoop(ctx workflow.Context) error {
	var msgs []string
	err := workflow.SetQueryHandler(ctx, bareQuery, func(page *barePage) ([]string, error) {
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
		var in string
		inputs.Receive(ctx, &in)
		var out string
		if err := workflow.ExecuteActivity(actx, bareActivity, in).Get(ctx, &out); err != nil {
			return err
		}
		msgs = append(msgs, out)
	}
}

// BareActivity returns its input.
func BareActivity(_ context.Context, in string) (string, error) { return in, nil }

func registerBare(r sdkworker.Registry) {
	r.RegisterWorkflowWithOptions(BareLoop, workflow.RegisterOptions{Name: bareWorkflow})
	r.RegisterActivityWithOptions(BareActivity, activity.RegisterOptions{Name: bareActivity})
}
