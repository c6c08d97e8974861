package contract

import (
	"errors"
	"fmt"
)

// Error types: the `type` of every refusal or failure the runtime reports.
// They are API (clients switch on them): add, never rename.
const (
	ErrInvalidInput = "INVALID_INPUT" // a start argument or input breaks a rule
	ErrModel        = "MODEL_ERROR"   // the model failed, refused the protocol, or never produced a valid output
	ErrTaskClosed   = "TASK_CLOSED"   // an input sent to a task that no longer takes inputs
	ErrInternal     = "INTERNAL"      // a runtime fault (storage unreadable, ...)
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
