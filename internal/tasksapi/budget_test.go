package tasksapi

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/taskdef"
)

// Every run of a task with a budget starts with it; a run request's own
// budget takes its place.
func TestRunArgsCarryTheBudget(t *testing.T) {
	task := &contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(500)}, OnExhausted: contract.OnExhaustedFail}
	d := taskdef.Definition{Name: "t", Model: "test/echo", Budget: task}
	in := "hi"
	args, _, _, _ := runArgs(d, "prompt", taskdef.RunRequest{Input: &in})
	require.Equal(t, task, args.Budget)

	own := &contract.Budget{Amounts: contract.Amounts{OutputTokens: contract.Amount(64)}}
	args, _, _, _ = runArgs(d, "prompt", taskdef.RunRequest{Input: &in, Budget: own})
	require.Equal(t, own, args.Budget)

	d.Budget = nil
	args, _, _, _ = runArgs(d, "prompt", taskdef.RunRequest{Input: &in})
	require.Nil(t, args.Budget, "no budget: unbounded")
}

// A run that failed BUDGET_EXCEEDED answers budget_exceeded (402), in an
// answer and in a stream's error event alike.
func TestBudgetExceededProblem(t *testing.T) {
	p := problemOfType(contract.ErrBudgetExceeded, "the next model call may cost more than is left")
	require.Equal(t, CodeBudgetExceeded, p.Code)
	require.Equal(t, http.StatusPaymentRequired, p.Status)
	require.Equal(t, "the next model call may cost more than is left", p.Detail)
}

// A refused raise names the body's field; a run that ended is run_closed.
func TestRaiseProblem(t *testing.T) {
	for _, tc := range []struct {
		err          error
		code, field  string
		status       int
		detailPrefix string
	}{
		{contract.Invalid("raise-budget.units: this task's budget does not limit units; raise only inputTokens"), CodeValidationFailed, "units", 400, "units: this task's budget does not limit units"},
		{contract.Invalid("raise-budget: this task has no budget; start it with StartArgs budget"), CodeValidationFailed, "", 400, "this task has no budget"},
		{&contract.Error{Type: contract.ErrTaskClosed, Message: "task has ended"}, CodeRunClosed, "", 409, "the run has ended"},
		{&contract.Error{Type: "TASK_NOT_FOUND", Message: "no task"}, CodeRunNotFound, "", 404, "no run run-x"},
	} {
		var p *Problem
		require.True(t, errors.As(raiseProblem("run-x", tc.err), &p))
		require.Equal(t, tc.code, p.Code, tc.err)
		require.Equal(t, tc.field, p.Field, tc.err)
		require.Equal(t, tc.status, p.Status, tc.err)
		require.Contains(t, p.Detail, tc.detailPrefix, tc.err)
	}
}
