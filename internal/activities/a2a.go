package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/a2a"
)

// Remote A2A agents (capabilities of kind a2a). Each call of the remote
// agent is a few short activities: SendA2AMessage starts (or answers) its
// task and returns at once, GetA2ATask reads it between the workflow's
// timers, CancelA2ATask cancels it when our turn is canceled. None holds a
// request or an activity open while the remote agent works. Agents come
// from the operator (AGENT_A2A_AGENTS), never from the task.

// Activity type names (API: never renamed). Under "agenttask." as the
// cleanup's are, so no team's own activity type is one of them.
const (
	SendA2AMessageName = "agenttask.SendA2AMessage"
	GetA2ATaskName     = "agenttask.GetA2ATask"
	CancelA2ATaskName  = "agenttask.CancelA2ATask"
)

// Bounds of what the workflow keeps of a remote task.
const (
	MaxA2AAnswerBytes  = 64 << 10 // the answer the model reads
	MaxA2AMessageBytes = 4 << 10  // a status message: a question, a reason
)

// A2ACall names a remote task of an operator-listed agent: the message
// to send (SendA2AMessage), or the task to read or cancel.
type A2ACall struct {
	Agent string `json:"agent"`
	// TaskID and ContextID: the remote task to continue, read or cancel
	// (empty for a first message, which starts one).
	TaskID    string `json:"task_id,omitempty"`
	ContextID string `json:"context_id,omitempty"`
	// MessageID is the message's ID, the same on every attempt, so an agent
	// that deduplicates by it starts one task however often it is sent.
	MessageID string `json:"message_id,omitempty"`
	Text      string `json:"text,omitempty"`
	Retry     Retry  `json:"retry"`
}

// A2ATaskView is what the workflow keeps of a remote task: its state,
// what it asks or why it failed, and once completed its answer.
type A2ATaskView struct {
	TaskID    string `json:"task_id,omitempty"`
	ContextID string `json:"context_id,omitempty"`
	State     string `json:"state,omitempty"` // a2a.State*
	// Message is the status message's text (at most MaxA2AMessageBytes):
	// what an input-required task asks, why one failed.
	Message string `json:"message,omitempty"`
	// Answer is a completed task's artifacts and message (at most
	// MaxA2AAnswerBytes).
	Answer string `json:"answer,omitempty"`
	// Refused is why the agent or its card refused the call for good (no
	// retry helps); the model reads it.
	Refused string `json:"refused,omitempty"`
}

// SendA2AMessage sends a message to a remote agent (asking for the task
// at once, not its end).
func (a *Activities) SendA2AMessage(ctx context.Context, in A2ACall) (*A2ATaskView, error) {
	p := a2a.SendParams{
		Message:       &a2a.Message{MessageID: in.MessageID, ContextID: in.ContextID, TaskID: in.TaskID, Role: []byte(`"` + a2a.RoleUser + `"`), Parts: []a2a.Part{a2a.TextPart(in.Text)}},
		Configuration: &a2a.SendConfiguration{ReturnImmediately: true},
	}
	t, err := a.A2A.Send(ctx, in.Agent, p)
	return a.a2aView(ctx, in, t, err)
}

// GetA2ATask reads a remote task.
func (a *Activities) GetA2ATask(ctx context.Context, in A2ACall) (*A2ATaskView, error) {
	t, err := a.A2A.Get(ctx, in.Agent, in.TaskID)
	return a.a2aView(ctx, in, t, err)
}

// CancelA2ATask cancels a remote task. A task that already ended, or an
// agent that refuses, is answered, not retried: the turn is over either way.
func (a *Activities) CancelA2ATask(ctx context.Context, in A2ACall) (*A2ATaskView, error) {
	t, err := a.A2A.Cancel(ctx, in.Agent, in.TaskID)
	return a.a2aView(ctx, in, t, err)
}

// a2aView turns an answer into what the workflow keeps; an outage is
// waited out (within the call's timeout), a refusal answered.
func (a *Activities) a2aView(ctx context.Context, in A2ACall, t *a2a.Task, err error) (*A2ATaskView, error) {
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the worker stops: another attempt follows
		}
		if a2a.Retryable(err) {
			return nil, a.waitOut(ctx, in.Retry, temporal.NewApplicationError(clip(err.Error(), 1000), contract.ErrA2AUnavailable))
		}
		return &A2ATaskView{TaskID: in.TaskID, Refused: clip(err.Error(), 2000)}, a.waitOut(ctx, in.Retry, nil)
	}
	v := &A2ATaskView{TaskID: t.ID, ContextID: t.ContextID, State: t.Status.State}
	if t.Status.Message != nil {
		v.Message = clip(a2a.Render(t.Status.Message.Parts), MaxA2AMessageBytes-len("…"))
	}
	if t.Status.State == a2a.StateCompleted {
		v.Answer = clip(t.Answer(), MaxA2AAnswerBytes-len("…")) // within what the model reads of a result
		if v.Answer == "" {
			v.Answer = fmt.Sprintf("(the agent %q completed its task without an answer)", in.Agent)
		}
	}
	return v, a.waitOut(ctx, in.Retry, nil)
}
