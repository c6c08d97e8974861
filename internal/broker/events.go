package broker

import (
	"encoding/json"

	"github.com/agenttask/agenttask/contract"
)

// The events beyond text, tool calls and a turn's end carry their body in
// Event.Data, one of the types below by Event.Type (docs/streaming.md#every-event).
// Who publishes each: docs/streaming-design.md.
const (
	// TypeTurnStarted: the turn's first model call took its inputs (a fact
	// of step 1: TurnInputs).
	TypeTurnStarted = "turn.started"
	// TypeInputsCommitted: inputs queued while the turn's tools ran joined
	// the turn with its next model call (a fact: TurnInputs).
	TypeInputsCommitted = "inputs.committed"
	// TypeTurnCommitted: a turn's answer entered the conversation (a fact
	// of the next call that stamps it: TurnCommitted).
	TypeTurnCommitted = "turn.committed"
	// TypeSubtaskStarted: a sub-task's first event (a fact of its first
	// call: SubtaskStarted).
	TypeSubtaskStarted = "subtask.started"
	// TypeApprovalRequested and TypeApprovalDecided: a tool call waits for
	// a person, and what they decided (contract.Approval).
	TypeApprovalRequested = "approval.requested"
	TypeApprovalDecided   = "approval.decided"
	// TypeBudgetWaiting: a model call waits for a raise (BudgetWaiting);
	// TypeBudgetRaised: a raise let it go on (BudgetRaised).
	TypeBudgetWaiting = "budget.waiting"
	TypeBudgetRaised  = "budget.raised"
	// TypeShapingAttempt: an attempt of the shaping pass and its verdict
	// (ShapingAttempt).
	TypeShapingAttempt = "shaping.attempt"
)

// TurnInputs is the body of turn.started and inputs.committed.
type TurnInputs struct {
	Inputs []CommittedInput `json:"inputs"`
}

// MaxInputSummary bounds an input's text in turn.started.
const MaxInputSummary = 256

// CommittedInput is one input a model call committed.
type CommittedInput struct {
	Position    int    `json:"position" doc:"Its place in the conversation (0-based)"`
	InputID     string `json:"inputId,omitempty"`
	ReceivedAt  string `json:"receivedAt,omitempty"`
	CommittedAt string `json:"committedAt"`
	Text        string `json:"text,omitempty" doc:"The start of its text, at most 256 bytes"`
	Truncated   bool   `json:"truncated,omitempty"`
}

// TurnCommitted is the body of turn.committed.
type TurnCommitted struct {
	CommittedTurn int    `json:"committedTurn" doc:"The turn whose answer was committed"`
	Position      int    `json:"position" doc:"The answer's place in the conversation"`
	CommittedAt   string `json:"committedAt"`
}

// SubtaskStarted is the body of subtask.started.
type SubtaskStarted struct {
	TaskID string `json:"taskId" doc:"The sub-task's own task ID"`
}

// BudgetWaiting is the body of budget.waiting.
type BudgetWaiting struct {
	Needs contract.Spend `json:"needs" doc:"The worst case of the model call that waits: what a raise must make room for"`
}

// BudgetRaised is the body of budget.raised.
type BudgetRaised struct {
	Left *contract.Amounts `json:"left,omitempty" doc:"What the budget has left after the raise"`
	By   string            `json:"by,omitempty" doc:"Who raised it"`
}

// ShapingAttempt is the body of shaping.attempt.
type ShapingAttempt struct {
	Attempt    int      `json:"shapingAttempt" doc:"The shaping pass's attempt (1-based)"`
	Fits       bool     `json:"fits" doc:"The object fits the output schema"`
	Violations []string `json:"violations,omitempty" doc:"Why it does not, each naming the path"`
}

// WithData is e with body as its Data.
func WithData(e Event, body any) Event {
	e.Data, _ = json.Marshal(body) // the bodies above always marshal
	return e
}
