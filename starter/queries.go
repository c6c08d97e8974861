package starter

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workflows"
)

// Queries and the result: what a caller reads of a task.

// Status queries the task's status.
func (c *Client) Status(ctx context.Context, taskID string) (contract.Status, error) {
	var st contract.Status
	v, err := c.c.QueryWorkflow(ctx, taskID, "", contract.QueryStatus)
	if err != nil {
		return st, taskError(taskID, "querying the status of", err)
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("decoding the status of task %q: %w", taskID, err)
	}
	return st, nil
}

// Messages queries the task's messages. A nil page asks for the whole list
// (refused by the task beyond contract.MaxFullListBytes); a page asks for
// entries [After, After+Limit), Limit 0 meaning as many as fit a reply.
func (c *Client) Messages(ctx context.Context, taskID string, page *contract.MessagesPage) ([]contract.Message, error) {
	var args []any
	if page != nil {
		args = []any{*page}
	}
	v, err := c.c.QueryWorkflow(ctx, taskID, "", contract.QueryMessages, args...)
	// Entries of earlier runs being loaded from a slow store: the worker
	// answers at once and goes on loading, so ask again in a moment.
	for deadline := time.Now().Add(workflows.MessagesLoadingRetryFor); workflows.IsMessagesLoading(err) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
		case <-time.After(workflows.MessagesLoadingRetryPause):
			v, err = c.c.QueryWorkflow(ctx, taskID, "", contract.QueryMessages, args...)
			continue
		}
		break
	}
	if workflows.IsMessagesLoading(err) {
		return nil, &contract.Error{Type: contract.ErrMessagesLoading, Message: fmt.Sprintf(
			"earlier messages of task %q are still being loaded from storage (slow or unavailable); retry in a moment", taskID)}
	}
	if err != nil {
		// A task whose execution Temporal removed: from its transcript.
		if out, ok, rerr := c.retainedMessages(ctx, taskID, page, err); ok {
			return out, rerr
		}
		return nil, taskError(taskID, "querying the messages of", err)
	}
	var out []contract.Message
	if err := v.Get(&out); err != nil {
		return nil, fmt.Errorf("decoding the messages of task %q: %w", taskID, err)
	}
	if out == nil {
		out = []contract.Message{}
	}
	return out, nil
}

// AllMessages reads the whole list page by page. Committed entries keep
// their positions; queued inputs sit after them and move down when a turn
// commits in front of them, so the queued tail is read last and the read
// starts again from the committed count if the list moved meanwhile.
func (c *Client) AllMessages(ctx context.Context, taskID string) ([]contract.Message, error) {
	var committed []contract.Message
	for {
		page, err := c.Messages(ctx, taskID, &contract.MessagesPage{After: len(committed)})
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			return append([]contract.Message{}, committed...), nil
		}
		i := firstUncommitted(page)
		committed = append(committed, page[:i]...)
		if i == len(page) {
			continue
		}
		tail, moved, err := c.queuedTail(ctx, taskID, len(committed), page[i:])
		if err != nil {
			return nil, err
		}
		if !moved {
			return append(committed, tail...), nil
		}
	}
}

// queuedTail reads the rest of the uncommitted tail; moved reports that a
// committed entry appeared in it (the list changed under the reader).
func (c *Client) queuedTail(ctx context.Context, taskID string, at int, tail []contract.Message) ([]contract.Message, bool, error) {
	for {
		page, err := c.Messages(ctx, taskID, &contract.MessagesPage{After: at + len(tail)})
		if err != nil {
			return nil, false, err
		}
		if len(page) == 0 {
			return tail, false, nil
		}
		if firstUncommitted(page) != 0 {
			return nil, true, nil
		}
		tail = append(tail, page...)
	}
}

func firstUncommitted(ms []contract.Message) int {
	for i, m := range ms {
		if m.CommittedAt == "" {
			return i
		}
	}
	return len(ms)
}

// Result waits for the task to end (following continue-as-new) and returns
// its result. A failed task returns a *contract.Error with the failure's type
// (MODEL_ERROR, INVALID_INPUT, ...) and message; a canceled, terminated or
// timed-out one TASK_CANCELED, TASK_TERMINATED or TASK_TIMED_OUT. A task
// whose budget ran out returns a *BudgetExceededError (BUDGET_EXCEEDED, with
// its records, usage and budget).
func (c *Client) Result(ctx context.Context, taskID string) (contract.Result, error) {
	var res contract.Result
	if err := c.c.GetWorkflow(ctx, taskID, "").Get(ctx, &res); err != nil {
		if be := budgetExceeded(err); be != nil {
			return res, be
		}
		return res, taskError(taskID, "waiting for", err)
	}
	return res, nil
}

// Ended reports whether the task's workflow has ended: it is not running,
// or it is gone (deleted, or removed by retention).
func (c *Client) Ended(ctx context.Context, taskID string) (bool, error) {
	d, err := c.c.DescribeWorkflowExecution(ctx, taskID, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}
