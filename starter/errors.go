package starter

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
)

// Error types the client adds to contract's. Like contract's they are API: add,
// never rename.
const (
	ErrTaskNotFound   = contract.ErrTaskNotFound   // no task has the ID (in this namespace)
	ErrTaskExists     = contract.ErrTaskExists     // Start: the task ID already names a task
	ErrTaskCanceled   = contract.ErrTaskCanceled   // Result: the task was canceled (by Temporal, not cancel-turn)
	ErrTaskTerminated = contract.ErrTaskTerminated // Result: the task was terminated by an operator
	ErrTaskTimedOut   = contract.ErrTaskTimedOut   // Result: a Temporal timeout ended the task
)

// The decide update's error types (contract.ErrApprovalNotFound and
// contract.ErrApprovalDecided), here beside the client's own: a refused
// Decide, Approve or Deny returns a *contract.Error of one of them, and
// nothing was written.
const (
	ErrApprovalNotFound = contract.ErrApprovalNotFound // no approval of the task has that ID
	ErrApprovalDecided  = contract.ErrApprovalDecided  // decided before; the first decision stands
)

// apiType matches the runtime's error types: upper case words joined by _.
var apiType = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)

// splitTyped reads the text of a *contract.Error ("TYPE: message") that
// Temporal carried as a plain message: an update validator or a query
// handler that returned a *contract.Error reaches the client as an
// ApplicationError of type "Error" whose message is err.Error().
func splitTyped(s string) (typ, msg string, ok bool) {
	typ, msg, ok = strings.Cut(s, ": ")
	if !ok || !apiType.MatchString(typ) {
		return "", "", false
	}
	return typ, msg, true
}

// taskError turns what Temporal returned for an operation on task id into
// the runtime's typed errors where it can, and wraps it otherwise.
func taskError(id, op string, err error) error {
	var se *contract.Error
	if errors.As(err, &se) {
		return se
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		typ, msg := ae.Type(), ae.Message()
		if !apiType.MatchString(typ) {
			if t, m, ok := splitTyped(msg); ok {
				typ, msg = t, m
			} else if typ == "" {
				typ = contract.ErrInternal
			}
		}
		return &contract.Error{Type: typ, Message: msg}
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return &contract.Error{Type: ErrTaskCanceled, Message: fmt.Sprintf("task %q was canceled", id)}
	}
	var terminated *temporal.TerminatedError
	if errors.As(err, &terminated) {
		return &contract.Error{Type: ErrTaskTerminated, Message: fmt.Sprintf("task %q was terminated", id)}
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return &contract.Error{Type: ErrTaskTimedOut, Message: fmt.Sprintf("task %q timed out: %s", id, timeout.Message())}
	}
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return &contract.Error{Type: ErrTaskExists, Message: fmt.Sprintf("task ID %q already names a task (running or ended) and task IDs are never reused; choose another, or leave it out to generate one", id)}
	}
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		if strings.Contains(notFound.Error(), "already completed") {
			// The server's answer to a signal or update of an ended workflow.
			return &contract.Error{Type: contract.ErrTaskClosed, Message: fmt.Sprintf("task %q has already ended and takes no more inputs or signals; start a new task", id)}
		}
		return &contract.Error{Type: ErrTaskNotFound, Message: fmt.Sprintf("no task with ID %q; check the ID and the namespace", id)}
	}
	var queryFailed *serviceerror.QueryFailed
	if errors.As(err, &queryFailed) {
		if t, m, ok := splitTyped(queryFailed.Error()); ok {
			return &contract.Error{Type: t, Message: m}
		}
	}
	return fmt.Errorf("%s task %q: %w", op, id, err)
}

// SearchAttributesRefused reports whether a start was refused because the
// server does not know the runtime's search attributes (SearchAttributes):
// the task then starts without them.
func SearchAttributesRefused(err error) bool {
	var ia *serviceerror.InvalidArgument
	if !errors.As(err, &ia) {
		return false
	}
	msg := ia.Error()
	return strings.Contains(strings.ToLower(msg), "search attribute") &&
		(strings.Contains(msg, contract.SearchAttributeAgentName) || strings.Contains(msg, contract.SearchAttributeAgentModel) ||
			strings.Contains(msg, contract.SearchAttributeAgentState))
}
