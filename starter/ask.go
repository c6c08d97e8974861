package starter

import (
	"context"

	"github.com/agenttask/agenttask/contract"
)

// Ask delivers an input with the `ask` update and waits for the output
// that answers it. A refused input (INVALID_INPUT, TASK_CLOSED, QUEUE_FULL,
// ASKS_FULL, ...) or a turn that ends without answering (TURN_CANCELED,
// ANSWER_PENDING, the task failing) comes back as a *contract.Error.
func (c *Client) Ask(ctx context.Context, taskID string, in contract.TaskIO) (contract.AskResult, error) {
	return c.AskWithID(ctx, taskID, "", in)
}

// AskWithID is Ask with an input ID, the update's ID: retrying it with the
// same ID is the same input, answered once (SendWithID says more).
func (c *Client) AskWithID(ctx context.Context, taskID, inputID string, in contract.TaskIO) (contract.AskResult, error) {
	return inputUpdate[contract.AskResult](ctx, c, taskID, inputID, contract.UpdateAsk, "asking", in)
}
