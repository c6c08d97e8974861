package agents

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

// ErrAskTimedOut is the TaskError type of an Ask that outlived its timeout.
const ErrAskTimedOut = contract.ErrAskTimedOut

// RefusedError says the runtime refused what the caller sent: the start
// arguments (INVALID_INPUT, INVALID_OUTPUT, OUTPUT_UNAVAILABLE), the task ID
// (TASK_EXISTS), or a follow-up (INVALID_INPUT, TASK_CLOSED, QUEUE_FULL,
// ASKS_FULL, TASK_NOT_FOUND). Nothing ran; the message says what to change.
type RefusedError struct {
	TaskID  string
	Type    string
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("agent task %q refused: %s: %s", e.TaskID, e.Type, e.Message)
}

// TaskError says the task ran and failed: MODEL_ERROR, INTERNAL,
// OUTPUT_UNFIT (Details: the records and the violations), TURN_CANCELED,
// ANSWER_PENDING, ASK_TIMED_OUT, or TASK_CANCELED, TASK_TERMINATED and
// TASK_TIMED_OUT when Temporal ended it.
type TaskError struct {
	TaskID  string
	Type    string
	Message string
	Details json.RawMessage // OUTPUT_UNFIT's details, when the failure carried them
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("agent task %q failed: %s: %s", e.TaskID, e.Type, e.Message)
}

// refusals are the error types of a refusal: nothing ran.
var refusals = map[string]bool{
	contract.ErrInvalidInput: true, contract.ErrInvalidOutput: true, contract.ErrOutputUnavailable: true,
	contract.ErrTaskClosed: true, contract.ErrQueueFull: true, contract.ErrAsksFull: true,
	starter.ErrTaskExists: true, starter.ErrTaskNotFound: true,
}

// typed is err as a RefusedError or TaskError, or err itself when it
// carries nothing the runtime names.
func typed(taskID string, err error) error {
	if err == nil {
		return nil
	}
	typ, msg, details := "", "", json.RawMessage(nil)
	var ae *temporal.ApplicationError
	var canceled *temporal.CanceledError
	var terminated *temporal.TerminatedError
	var timeout *temporal.TimeoutError
	var exists *temporal.ChildWorkflowExecutionAlreadyStartedError
	switch {
	case errors.As(err, &exists):
		typ, msg = starter.ErrTaskExists, fmt.Sprintf("task ID %q already names a task and task IDs are never reused; choose another (WithTaskID) or leave it out", taskID)
	case errors.As(err, &ae) && ae.Type() != "":
		typ, msg = ae.Type(), ae.Message()
		if ae.HasDetails() {
			var raw json.RawMessage
			if ae.Details(&raw) == nil {
				details = raw
			}
		}
	case errors.As(err, &canceled):
		typ, msg = starter.ErrTaskCanceled, "the task was canceled"
	case errors.As(err, &terminated):
		typ, msg = starter.ErrTaskTerminated, "the task was terminated by an operator"
	case errors.As(err, &timeout):
		typ, msg = starter.ErrTaskTimedOut, "a Temporal timeout ended the task: "+timeout.Message()
	default:
		return err
	}
	if refusals[typ] {
		return &RefusedError{TaskID: taskID, Type: typ, Message: msg}
	}
	return &TaskError{TaskID: taskID, Type: typ, Message: msg, Details: details}
}
