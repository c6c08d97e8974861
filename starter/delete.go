package starter

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/cleanup"
)

// DeleteResult is what Delete removed: the task and its sub-tasks (the task
// first), the executions that were running, the runs deleted, and the
// transcript objects (entries, stashed state), files and streamed events.
type DeleteResult = cleanup.DeleteResult

// Delete removes the task and everything it owns, its sub-tasks too: their
// executions (every run of each chain), transcripts, stashed state, files
// in their spaces and streamed events. Of a transcript that a live task
// continues (a resume or rescue of it), the entries that task reads stay
// until it goes: the result's Kept names them and the task, and the
// deleted task reads as deleted all the same. It runs the DeleteTask workflow on
// the workers' queue (their worker has the storage) and waits for it: a
// deletion interrupted (ctx ends, the worker stops) goes on, and calling
// Delete again joins it or finishes what is left. A task of which nothing
// is found, such as one deleted before, is a TASK_NOT_FOUND error; after
// a deletion every read of the task answers TASK_NOT_FOUND.
func (c *Client) Delete(ctx context.Context, taskID string) (DeleteResult, error) {
	var res DeleteResult
	if taskID == "" {
		return res, contract.Invalid("delete: the task ID is empty")
	}
	run, err := cleanup.StartDelete(ctx, c.c, c.queue, taskID)
	if err != nil {
		return res, fmt.Errorf("delete %s: start the deletion: %w", taskID, err)
	}
	if err := run.Get(ctx, &res); err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == "INVALID_INPUT" {
			return res, contract.Invalid("delete: %s", app.Message())
		}
		return res, fmt.Errorf("delete %s: %w (the deletion goes on; call Delete again to wait for it)", taskID, err)
	}
	if !res.Found() {
		return res, &contract.Error{Type: ErrTaskNotFound, Message: fmt.Sprintf("no task with ID %q (nothing of it is stored; deleted before?); check the ID and the namespace", taskID)}
	}
	return res, nil
}
