package mount

import (
	"fmt"

	"github.com/agenttask/agenttask/contract"
)

// Error types of the mount, beside contract.ErrInvalidInput. They are API
// (clients switch on them): add, never rename.
const (
	// ErrFileNotFound: a reference names no object in the task's space.
	ErrFileNotFound = contract.ErrFileNotFound
	// ErrFileChanged: the object is no longer the one that was referenced
	// (its size or version attributes differ, or its content no longer has
	// the recorded sha256).
	ErrFileChanged = contract.ErrFileChanged
)

func notFound(ref, format string, args ...any) *contract.Error {
	msg := fmt.Sprintf("%s does not exist in this task's mount", ref)
	if format != "" {
		msg += " (" + fmt.Sprintf(format, args...) + ")"
	}
	msg += "; upload it first (or copy it in from the task that has it), then refer to it by that name"
	return &contract.Error{Type: ErrFileNotFound, Message: msg}
}

func changed(ref, format string, args ...any) *contract.Error {
	return &contract.Error{Type: ErrFileChanged, Message: fmt.Sprintf("%s changed after it was referenced: %s; attach it again to use its current content", ref, fmt.Sprintf(format, args...))}
}
