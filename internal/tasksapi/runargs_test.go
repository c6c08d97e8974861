package tasksapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/taskdef"
)

// A run's message is one text part: a filled prompt (a task without
// input) or an input over the inline budget (docs/content.md#content-parts)
// is refused, never split.
func TestRunTextOverTheInlineBudgetIsRefusedNotSplit(t *testing.T) {
	d := taskdef.Definition{Name: "t", Model: "test/echo"}
	at := strings.Repeat("p", contract.MaxInlineTextBytes)
	_, in, field, over := runArgs(d, at, taskdef.RunRequest{})
	require.Zero(t, over)
	require.Empty(t, field)
	require.Len(t, in.Message, 1, "at the budget: one part")
	require.Equal(t, at, *in.Message[0].Text)

	_, _, field, over = runArgs(d, at+"p", taskdef.RunRequest{})
	require.Equal(t, contract.MaxInlineTextBytes+1, over, "the filled prompt of a task without input")
	require.Equal(t, "variables", field)

	long := at + "i"
	_, _, field, over = runArgs(d, "short prompt", taskdef.RunRequest{Input: &long})
	require.Equal(t, contract.MaxInlineTextBytes+1, over)
	require.Equal(t, "input", field)
}

// A follow-up the task cannot take now is 429 task_busy with the task's
// corrective message, not a validation failure.
func TestABusyTaskRefusesAFollowUpWithTaskBusy(t *testing.T) {
	for _, typ := range []string{contract.ErrQueueBusy, contract.ErrQueueFull, contract.ErrAsksFull} {
		err := closedOr(temporal.NewNonRetryableApplicationError("retry in a second or two", typ, nil))
		var p *Problem
		if !errors.As(err, &p) || p.Code != CodeTaskBusy || p.Status != http.StatusTooManyRequests || p.Detail != "retry in a second or two" {
			t.Fatalf("%s: %#v", typ, err)
		}
	}
}
