package starter

import (
	"context"
	"errors"
	"unicode/utf8"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
)

// ErrBudgetExceeded (contract.ErrBudgetExceeded), beside the client's own
// types: Result of a task whose budget ran out (with onExhausted "fail", or
// no raise-budget within its idle timeout) returns a *BudgetExceededError
// of this type.
const ErrBudgetExceeded = contract.ErrBudgetExceeded

// BudgetExceededError is a task's BUDGET_EXCEEDED failure with its details:
// the records it collected, its usage and its budget, so nothing it did is
// lost with it. It unwraps to the *contract.Error (contract.TypeOf is
// BUDGET_EXCEEDED).
type BudgetExceededError struct {
	Err     *contract.Error
	Details contract.BudgetExceeded
}

func (e *BudgetExceededError) Error() string { return e.Err.Error() }
func (e *BudgetExceededError) Unwrap() error { return e.Err }

// budgetExceeded is err as a *BudgetExceededError when the task failed with
// BUDGET_EXCEEDED and its details decode; nil otherwise.
func budgetExceeded(err error) *BudgetExceededError {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != contract.ErrBudgetExceeded {
		return nil
	}
	out := &BudgetExceededError{Err: &contract.Error{Type: ae.Type(), Message: ae.Message()}}
	if ae.HasDetails() {
		_ = ae.Details(&out.Details) // no details: the error alone
	}
	return out
}

// RaiseBudget adds args' amounts to the task's budget limits with the
// raise-budget update and returns the budget as the task then holds it
// (contract.BudgetStatus: limit, used, reserved, left). A task waiting in
// awaiting_budget makes its call once what is left covers the call's worst
// case (BudgetStatus.Needed says how much that is). The task refuses with
// INVALID_INPUT a raise of a task without a budget, of a dimension its
// budget does not limit, or past contract.MaxBudgetAmount; CheckRaiseBudget
// refuses, before anything is sent, amounts no task can take.
//
// A raise adds: a repeated RaiseBudget raises again. An ended task is
// TASK_CLOSED.
func (c *Client) RaiseBudget(ctx context.Context, taskID string, args contract.RaiseBudgetArgs) (contract.BudgetStatus, error) {
	var res contract.BudgetStatus
	if err := CheckRaiseBudget(args); err != nil {
		return res, err
	}
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   taskID,
		UpdateName:   contract.UpdateRaiseBudget,
		Args:         []any{args},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		return contract.BudgetStatus{}, taskError(taskID, "raising the budget of", err)
	}
	return res, nil
}

// CheckRaiseBudget refuses, before anything is sent, a raise no task can
// take: no amount, an amount below 1 or over contract.MaxBudgetAmount, a by
// over 256 bytes or not UTF-8. The refusal is an INVALID_INPUT
// *contract.Error. The task checks the rest (that its budget limits each
// dimension raised).
func CheckRaiseBudget(args contract.RaiseBudgetArgs) error {
	if !utf8.ValidString(args.By) {
		return contract.Invalid("raise-budget.by: not valid UTF-8")
	}
	// Against a budget limiting every dimension at 0, CheckRaise checks
	// only the amounts themselves.
	zero := contract.Amount(0)
	return contract.CheckRaise(contract.Budget{Amounts: contract.Amounts{Units: zero, InputTokens: zero, OutputTokens: zero}}, args)
}
