package tasksapi

import (
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
)

// How a run's failures answer: the problem of a run's answer, of a
// stream's error event and of a refused follow-up.

// waitEnded says the wait for the ask ended, not the run: the server may
// cancel the long poll a moment before rctx's deadline fires here, so the
// SDK's timeout error is a timeout even while rctx.Err() is still nil.
func waitEnded(err error) bool {
	var ended *client.WorkflowUpdateServiceTimeoutOrCanceledError
	return errors.As(err, &ended)
}

// runProblem maps a run's failure to its problem.
func runProblem(err error) *Problem {
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return problem(CodeInternal, "a run of that ID exists already", "")
	}
	return problemOfType(errorTypeOf(err))
}

// errorTypeOf is a run failure's error type (the task's error types, as
// the ask update and the model activity report them) and message.
func errorTypeOf(err error) (string, string) {
	var ae *temporal.ApplicationError
	var canceled *temporal.CanceledError
	switch {
	case errors.As(err, &ae):
		return ae.Type(), ae.Message()
	case errors.As(err, &canceled):
		return contract.ErrTurnCanceled, "the run was canceled"
	}
	return "", "the run failed: " + err.Error()
}

// problemOfType maps a run's error type to its problem: the same for an
// answer and for a stream's error event.
func problemOfType(typ, msg string) *Problem {
	switch typ {
	case contract.ErrModel, contract.ErrModelUnavailable, contract.ErrInternal:
		return problem(CodeModelError, msg, "")
	case contract.ErrInvalidInput, "GUARDRAIL":
		return problem(CodeValidationFailed, msg, "")
	case contract.ErrTaskClosed, contract.ErrTurnCanceled:
		return problem(CodeRunClosed, msg, "")
	case contract.ErrBudgetExceeded:
		return problem(CodeBudgetExceeded, msg, "")
	case "":
		return problem(CodeInternal, msg, "")
	}
	return problem(CodeModelError, typ+": "+msg, "")
}

// closedOr maps a refused follow-up: a run that has ended is run_closed.
func closedOr(err error) error {
	var ae *temporal.ApplicationError
	var nf *serviceerror.NotFound
	var done *serviceerror.FailedPrecondition
	switch {
	case errors.As(err, &ae) && ae.Type() == contract.ErrTaskClosed, errors.As(err, &nf), errors.As(err, &done):
		return problem(CodeRunClosed, "the run has ended: "+err.Error(), "")
	case errors.As(err, &ae) && (ae.Type() == contract.ErrQueueBusy || ae.Type() == contract.ErrQueueFull || ae.Type() == contract.ErrAsksFull):
		return problem(CodeTaskBusy, ae.Message(), "")
	case errors.As(err, &ae):
		return problem(CodeValidationFailed, ae.Message(), "")
	}
	return problem(CodeInternal, err.Error(), "")
}
