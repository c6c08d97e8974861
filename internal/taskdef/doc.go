// Package taskdef holds the rules of the Tasks API (docs/tasks-api.md) as pure
// functions: prompt placeholders, task definitions and run requests are
// decoded strictly and validated here, so the HTTP layer only maps a
// *FieldError to a validation_failed problem naming its field.
//
// Fields are named as the API names them, dotted: "history.maxBytes",
// "variables.customer.value", "history[2].role". Only the first fault is
// reported, in the order the seed lists the fields.
package taskdef

import "fmt"

// FieldError is a refused field and why. Field is empty when the body as a
// whole is refused (not JSON, not an object, trailing data, too large).
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Detail
	}
	return e.Field + ": " + e.Detail
}

func refuse(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)}
}
