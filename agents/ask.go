package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/starter"
)

// AskActivityName is the activity Ask runs; the plugin registers
// AskActivity under it. It is API: never renamed.
const AskActivityName = activities.AskName

// AskRequest is the activity's argument.
type AskRequest struct {
	TaskID string          `json:"task_id"`
	Input  contract.TaskIO `json:"input"`
	// Refused, when set, is why the input is refused before it is sent
	// (INVALID_INPUT): its parts were decoded from JSON with keys a part
	// does not have (contract.CheckPartKeys), which the activity's own
	// argument would no longer carry. The activity fails with it.
	Refused string `json:"refused,omitempty"`
}

// Ask sends input to the running task taskID (a conversation: Start) with
// the ask update and waits for the output that answers it, at most
// WithAskTimeout (DefaultAskTimeout). A workflow cannot send an update
// itself, so an activity sends it (AskActivityName, on the calling
// workflow's queue unless WithTaskQueue says otherwise).
func Ask(ctx workflow.Context, taskID string, input contract.TaskIO, opts ...Option) (*Answer, error) {
	return ask(ctx, taskID, input, optionsOf(opts))
}

// Text is an input of one text part, s whole. It never splits or cuts s:
// text over contract.MaxInlineTextBytes (100,000 bytes,
// docs/content.md#content-parts) makes an input that Ask, Run and Start
// refuse with a *RefusedError of type INVALID_INPUT naming the limit and the
// size. Such text is file content: upload it to the agent's mount and send a
// file reference instead. TextInput says so at once, before anything is
// sent.
func Text(s string) contract.TaskIO {
	return contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(s)}}
}

// TextInput is Text, or a *RefusedError (INVALID_INPUT) when s is over the
// inline budget of one text part (contract.MaxInlineTextBytes).
func TextInput(s string) (contract.TaskIO, error) {
	if n := len(s); n > contract.MaxInlineTextBytes {
		return contract.TaskIO{}, &RefusedError{Type: contract.ErrInvalidInput, Message: fmt.Sprintf(
			"the text is %d bytes, over the %d-byte inline budget of one text part (seed 001); it is never split or cut: upload it to the agent's mount and send a file reference (task://...) instead, or send less",
			n, contract.MaxInlineTextBytes)}
	}
	return Text(s), nil
}

func ask(ctx workflow.Context, taskID string, input contract.TaskIO, o options) (*Answer, error) {
	if strings.TrimSpace(taskID) == "" {
		return nil, &RefusedError{Type: contract.ErrInvalidInput, Message: "Ask needs the task's ID (Task.TaskID from Start)"}
	}
	if o.askTimeout <= 0 {
		o.askTimeout = DefaultAskTimeout
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              o.taskQueue,
		ScheduleToCloseTimeout: o.askTimeout,
		StartToCloseTimeout:    o.askTimeout,
		Summary:                "ask " + taskID,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
		},
	})
	req := AskRequest{TaskID: taskID, Input: input}
	if err := contract.CheckPartKeys(input); err != nil {
		// Refused by the activity, not here: the call's commands stay
		// those of every recorded run, and encoding the input for the
		// activity would drop the keys unseen.
		req.Refused = contract.MessageOf(err)
	}
	var res contract.AskResult
	err := workflow.ExecuteActivity(ctx, AskActivityName, req).Get(ctx, &res)
	if err != nil {
		var te *temporal.TimeoutError
		if errors.As(err, &te) {
			return nil, &TaskError{TaskID: taskID, Type: ErrAskTimedOut, Message: fmt.Sprintf("no answer within %s (WithAskTimeout); the task still answers the input: read it with the messages query", o.askTimeout)}
		}
		return nil, typed(taskID, err)
	}
	return &Answer{TaskID: taskID, Text: contract.TextOf(res.Output), Output: res.Output, Turn: res.Turn, ReceivedAt: res.ReceivedAt}, nil
}

// AskActivity sends the ask update through the activity's own client
// (activity.GetClient) and returns the answer. The update's ID is the
// activity's (run and activity ID), so a retried attempt is the same input,
// answered once. The runtime's refusals and failures are final.
func AskActivity(ctx context.Context, req AskRequest) (contract.AskResult, error) {
	if req.Refused != "" {
		return contract.AskResult{}, temporal.NewNonRetryableApplicationError(req.Refused, contract.ErrInvalidInput, nil)
	}
	info := activity.GetInfo(ctx)
	id := fmt.Sprintf("ask-%s-%s", info.WorkflowExecution.RunID, info.ActivityID)
	res, err := starter.New(activity.GetClient(ctx), "").AskWithID(ctx, req.TaskID, id, req.Input)
	var ce *contract.Error
	if errors.As(err, &ce) {
		return res, temporal.NewNonRetryableApplicationError(ce.Message, ce.Type, nil)
	}
	return res, err
}
