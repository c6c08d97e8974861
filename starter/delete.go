package starter

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/cleanup"
)

// DeleteResult is what Delete removed: the task and its sub-tasks (the task
// first), the executions that were running, the runs deleted, and the
// transcript objects (entries, stashed state), files and streamed events;
// and what it kept for live continuations. It is the DeleteTask workflow's
// result, as the Tasks API's DELETE answers it too.
type DeleteResult struct {
	// Tasks are the task and the sub-tasks found under it, the task first.
	Tasks []string `json:"tasks"`
	// Terminated counts the executions that were running.
	Terminated int `json:"terminated"`
	// Executions counts the runs Temporal was asked to delete.
	Executions int `json:"executions"`
	// TranscriptObjects, Files and Events count the objects removed.
	TranscriptObjects int `json:"transcriptObjects"`
	Files             int `json:"files"`
	Events            int `json:"events"`
	// Kept are the task's transcripts a live continuation (a resumed or
	// rescued task) still reads: their entries below the continuation's
	// own stay, with their link, until no continuation reads them.
	Kept []KeptTranscript `json:"kept,omitempty"`
}

// KeptTranscript is one transcript a deletion kept for live continuations.
type KeptTranscript struct {
	TaskID     string `json:"taskId"`
	FirstRunID string `json:"firstRunId"`
	// Entries counts the entries kept (those below Below).
	Entries int `json:"entries"`
	Below   int `json:"below"`
	// For are the live continuations that read them.
	For []Continuation `json:"for"`
}

// Continuation names a task that continues another: it reads the
// transcript's entries below From.
type Continuation struct {
	TaskID     string `json:"taskId"`
	FirstRunID string `json:"firstRunId"`
	From       int    `json:"from"`
	// RecordedAt is when the continuation was recorded (UTC, RFC 3339).
	RecordedAt string `json:"recordedAt,omitempty"`
}

// Found reports whether the deletion found anything of the task: an
// execution or an object. A repeated deletion finds nothing.
func (r DeleteResult) Found() bool {
	return r.Executions > 0 || r.TranscriptObjects+r.Files+r.Events > 0
}

// Delete removes the task and everything it owns, its sub-tasks too: their
// executions (every run of each chain), transcripts, stashed state, files
// in their spaces and streamed events. Of a transcript that a live task
// continues (a resume or rescue of it), the entries that task reads stay
// until it goes: the result's Kept names them and the task, and the
// deleted task reads as deleted all the same. It runs the DeleteTask workflow on
// the workers' queue (their worker has the storage) and waits for it: a
// deletion interrupted (ctx ends, the worker stops) goes on, and calling
// Delete again joins it or finishes what is left. A task of which nothing
// is found, such as one deleted before, is a TASK_NOT_FOUND error; after
// a deletion every read of the task answers TASK_NOT_FOUND.
func (c *Client) Delete(ctx context.Context, taskID string) (DeleteResult, error) {
	var res DeleteResult
	if taskID == "" {
		return res, contract.Invalid("delete: the task ID is empty")
	}
	run, err := cleanup.StartDelete(ctx, c.c, c.queue, taskID)
	if err != nil {
		return res, fmt.Errorf("delete %s: start the deletion: %w", taskID, err)
	}
	if err := run.Get(ctx, &res); err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == contract.ErrInvalidInput {
			return res, contract.Invalid("delete: %s", app.Message())
		}
		return res, fmt.Errorf("delete %s: %w (the deletion goes on; call Delete again to wait for it)", taskID, err)
	}
	if !res.Found() {
		return res, &contract.Error{Type: ErrTaskNotFound, Message: fmt.Sprintf("no task with ID %q (nothing of it is stored; deleted before?); check the ID and the namespace", taskID)}
	}
	return res, nil
}
