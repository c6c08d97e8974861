package contract

import (
	"errors"
	"fmt"
)

// Error types: the `type` of every refusal or failure the runtime reports,
// all of them, wherever they are raised (the workflow, its activities, the
// clients, the retention and deletion workflows). They are API (clients
// switch on them): add, never rename. docs/contract.md#errors lists what
// each means to a caller.
const (
	// ErrInvalidInput: a start argument or input breaks a rule.
	ErrInvalidInput = "INVALID_INPUT"
	// ErrModel: the model failed, refused the protocol, or never produced
	// a valid output.
	ErrModel = "MODEL_ERROR"
	// ErrModelUnavailable: a transient failure of the model provider,
	// retried by the model call's retry policy (reported as MODEL_ERROR if
	// it never recovers).
	ErrModelUnavailable = "MODEL_UNAVAILABLE"
	// ErrMCPUnavailable: a retryable failure to reach an MCP server, waited
	// out like a model outage.
	ErrMCPUnavailable = "MCP_UNAVAILABLE"
	// ErrA2AUnavailable: a retryable failure to reach a remote A2A agent,
	// waited out like a model outage.
	ErrA2AUnavailable = "A2A_UNAVAILABLE"
	// ErrInternal: a runtime fault (storage unreadable, ...).
	ErrInternal = "INTERNAL"
	// ErrTaskClosed: an input sent to a task that no longer takes inputs.
	ErrTaskClosed = "TASK_CLOSED"
	// ErrGuardrail: a guardrail of the agent refused the input.
	ErrGuardrail = "GUARDRAIL"

	// ErrFileNotFound: a file reference names no object in the task's
	// space.
	ErrFileNotFound = "FILE_NOT_FOUND"
	// ErrFileChanged: the object is no longer the one that was referenced
	// (its size or version attributes differ, or its content no longer has
	// the recorded sha256).
	ErrFileChanged = "FILE_CHANGED"

	// ErrQueueFull refuses an input while the task's queue is full
	// (MaxQueuedInputs, MaxQueuedBytes; the `send` and `ask` updates'
	// validators; a signal counts in status.rejected).
	ErrQueueFull = "QUEUE_FULL"
	// ErrQueueBusy refuses a send or an ask past MaxUpdatesInFlight: retry
	// in a moment, or send it as the input signal, which takes no slot.
	ErrQueueBusy = "QUEUE_BUSY"
	// ErrAsksFull refuses an ask past MaxWaitingAsks waiting at once.
	ErrAsksFull = "ASKS_FULL"
	// ErrAnswerPending ends an ask whose run continued as new while its
	// turn waited for approvals, or past twice its continue-as-new
	// threshold with inputs still arriving: the input is received and
	// stays in the task; its answer comes in the next run (read it with
	// `messages`).
	ErrAnswerPending = "ANSWER_PENDING"
	// ErrAskTimedOut: an ask (agents.Ask) outlived its timeout; the input
	// stays with the task.
	ErrAskTimedOut = "ASK_TIMED_OUT"
	// ErrTurnCanceled: the turn an ask waited for was canceled
	// (cancel-turn).
	ErrTurnCanceled = "TURN_CANCELED"
	// ErrMessagesLoading: the `messages` query's refusal while entries of
	// earlier runs are being loaded from a slow store; nothing is wrong,
	// retry the query in a moment (the clients of this module do).
	ErrMessagesLoading = "MESSAGES_LOADING"

	// ErrApprovalNotFound: no approval of the task has that ID (decide).
	ErrApprovalNotFound = "APPROVAL_NOT_FOUND"
	// ErrApprovalDecided: the approval was decided before; the first
	// decision stands (decide).
	ErrApprovalDecided = "APPROVAL_DECIDED"

	// ErrBudgetExceeded ends a task whose budget ran out: with onExhausted
	// "fail" at once, otherwise when no raise came within the idle timeout.
	// Its details carry the task's records, usage and budget
	// (BudgetExceeded).
	ErrBudgetExceeded = "BUDGET_EXCEEDED"

	// Error types of the output shaping pass (docs/output.md).
	ErrInvalidOutput     = "INVALID_OUTPUT"     // the output schema is outside the subset
	ErrOutputUnfit       = "OUTPUT_UNFIT"       // no shaping attempt fitted the schema
	ErrOutputUnavailable = "OUTPUT_UNAVAILABLE" // output asked for, and no output model anywhere

	// Error types of the clients (package starter, the Tasks API).
	ErrTaskNotFound     = "TASK_NOT_FOUND"     // no task has the ID (in this namespace)
	ErrTaskExists       = "TASK_EXISTS"        // a start: the task ID already names a task
	ErrTaskCanceled     = "TASK_CANCELED"      // the task was canceled (by Temporal, not cancel-turn)
	ErrTaskTerminated   = "TASK_TERMINATED"    // the task was terminated by an operator
	ErrTaskTimedOut     = "TASK_TIMED_OUT"     // a Temporal timeout ended the task
	ErrTaskNotRescuable = "TASK_NOT_RESCUABLE" // rescue: the task is running, or completed (resume it instead)
	ErrTaskNotResumable = "TASK_NOT_RESUMABLE" // resume: the task is not completed (rescue it instead)
	// ErrTaskRunning: a deletion that keeps running tasks found the task
	// running, and removed nothing.
	ErrTaskRunning = "TASK_RUNNING"
)

// Error is a refusal with a type and a corrective, human message.
type Error struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Type + ": " + e.Message }

// Invalid builds an INVALID_INPUT error.
func Invalid(format string, args ...any) *Error {
	return &Error{Type: ErrInvalidInput, Message: fmt.Sprintf(format, args...)}
}

// TypeOf returns the error type carried by err, or "" when it carries none.
func TypeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Type
	}
	return ""
}

// MessageOf is the message of err without its type prefix.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
