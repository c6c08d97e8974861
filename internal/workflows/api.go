// Package workflows holds the AgentTask workflow: one Temporal workflow per
// agent task, holding its conversation (seed 000) as workflow state.
//
// The contract it implements (names, arguments, replies) is public, in
// package contract (contract/workflow.go); this file names it here, so the
// workflow code reads as before. Every name is API that services in any
// language code against: add, never rename.
package workflows

import (
	"encoding/json"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// The contract's types.
type (
	Mode           = contract.Mode
	State          = contract.State
	ContinueFrom   = contract.ContinueFrom
	HistoryMessage = contract.HistoryMessage
	CancelTurnArgs = contract.CancelTurnArgs
	AskResult      = contract.AskResult
	Collected      = contract.Collected
	Describe       = contract.Describe
	SendResult     = contract.SendResult
	Retrying       = contract.Retrying
	Usage          = contract.Usage
	ErrorInfo      = contract.ErrorInfo
	Rejection      = contract.Rejection
	TurnInfo       = contract.TurnInfo
	Status         = contract.Status
	Approval       = contract.Approval
	Decision       = contract.Decision
	DecideArgs     = contract.DecideArgs
	MessagesPage   = contract.MessagesPage
	Result         = contract.Result
)

// The contract's names, bounds and error types.
const (
	DefaultTaskQueue           = contract.DefaultTaskQueue
	WorkflowType               = contract.WorkflowType
	SignalInput                = contract.SignalInput
	SignalClose                = contract.SignalClose
	SignalCancelTurn           = contract.SignalCancelTurn
	SignalRetrying             = contract.SignalRetrying
	UpdateSend                 = contract.UpdateSend
	UpdateAsk                  = contract.UpdateAsk
	QueryStatus                = contract.QueryStatus
	QueryMessages              = contract.QueryMessages
	QueryCollected             = contract.QueryCollected
	QueryDescribe              = contract.QueryDescribe
	UpdateDecide               = contract.UpdateDecide
	QueryApprovals             = contract.QueryApprovals
	SearchAttributeAgentName   = contract.SearchAttributeAgentName
	SearchAttributeAgentModel  = contract.SearchAttributeAgentModel
	SearchAttributeAgentState  = contract.SearchAttributeAgentState
	ModeConversation           = contract.ModeConversation
	ModeSingle                 = contract.ModeSingle
	StateWaiting               = contract.StateWaiting
	StateWorking               = contract.StateWorking
	StateAwaitingApproval      = contract.StateAwaitingApproval
	StateShaping               = contract.StateShaping
	StateCompleted             = contract.StateCompleted
	StateFailed                = contract.StateFailed
	StateCanceled              = contract.StateCanceled
	DefaultIdleTimeout         = contract.DefaultIdleTimeout
	MaxQueuedInputs            = contract.MaxQueuedInputs
	MaxQueuedBytes             = contract.MaxQueuedBytes
	MaxVariablesBytes          = contract.MaxVariablesBytes
	ErrQueueFull               = contract.ErrQueueFull
	MaxHistoryMessages         = contract.MaxHistoryMessages
	MaxHistoryBytes            = contract.MaxHistoryBytes
	ErrApprovalNotFound        = contract.ErrApprovalNotFound
	ErrApprovalDecided         = contract.ErrApprovalDecided
	AgentStateActive           = contract.AgentStateActive
	AgentStateRetrying         = contract.AgentStateRetrying
	AgentStateAwaitingApproval = contract.AgentStateAwaitingApproval
	AgentStateShaping          = contract.AgentStateShaping
	ReasonApprovalTimedOut     = contract.ReasonApprovalTimedOut
	ReasonTaskClosed           = contract.ReasonTaskClosed
	ReasonTurnCanceled         = contract.ReasonTurnCanceled
	MaxPageBytes               = contract.MaxPageBytes
	MaxFullListBytes           = contract.MaxFullListBytes
	EndedByClose               = contract.EndedByClose
	EndedBySingle              = contract.EndedBySingle
	EndedByIdle                = contract.EndedByIdle
	EndedByFinish              = contract.EndedByFinish
	MaxWaitingAsks             = contract.MaxWaitingAsks
	ErrAsksFull                = contract.ErrAsksFull
	ErrAnswerPending           = contract.ErrAnswerPending
	MaxCallsPerResponse        = contract.MaxCallsPerResponse
)

// StartArgs is the workflow's one argument.
type StartArgs struct {
	Agent contract.AgentSpec `json:"agent"`
	Input *contract.TaskIO   `json:"input,omitempty"`
	Mode  Mode               `json:"mode,omitempty"` // default conversation
	// IdleTimeout (a Go duration such as "30m") ends a conversation that has
	// had no input and no running turn for that long. Default 24h.
	IdleTimeout string `json:"idleTimeout,omitempty"`
	// ModelRetryTimeout (a Go duration, default "24h", at most "168h") is
	// how long model calls and arrival checks wait out an outage (429, 5xx,
	// timeouts, connection errors, 401/403, a provider this worker does not
	// serve, unavailable storage) before the task fails with MODEL_ERROR.
	ModelRetryTimeout string `json:"modelRetryTimeout,omitempty"`
	// ContinueAsNewEvents, when positive, continues as new once a run's history
	// reaches that many events, in addition to whenever Temporal suggests it.
	ContinueAsNewEvents int `json:"continueAsNewEvents,omitempty"`

	// Variables fill {{name}} placeholders in the agent's instructions.
	Variables map[string]json.RawMessage `json:"variables,omitempty"`
	// Secrets names variables whose values are masked: never in a model
	// request, a log line, an activity argument or result.
	Secrets []string `json:"secrets,omitempty"`
	// Collected holds what earlier runs of the same task saved: the run
	// starts with them as variables (Variables win a clash) and recalls them.
	Collected map[string]json.RawMessage `json:"collected,omitempty"`
	// Output asks for the caller's JSON when the task is done (seed 003).
	Output *contract.OutputSpec `json:"output,omitempty"`
	// Continue makes the task continue an earlier task's conversation (the
	// starter's rescue and resume fill it): its messages come first, read
	// from that task's transcript.
	Continue *ContinueFrom `json:"continue,omitempty"`

	// History is an earlier conversation, oldest first: committed entries
	// before the first input (user: inputs, assistant: outputs).
	History []HistoryMessage `json:"history,omitempty"`

	// Stream publishes the model's text as it is written: events on the
	// broker's subject runs.<task ID> (docs/streaming.md), which the Tasks
	// API serves as server-sent events. Only for agents that answer in plain
	// text or JSON (no capabilities, exposes, mount or output) and task IDs
	// of letters, digits, '-' and '_'. A worker without a broker runs the
	// task all the same; its text is then not streamed.
	Stream bool `json:"stream,omitempty"`

	// Carry is written by the runtime itself when it continues as new: the
	// state of the previous run. Callers never set it.
	Carry *Carry `json:"carry,omitempty"`
	// CarryRef, written by the runtime in place of everything else when the
	// next run's argument would be large: the stash holds it (largestate.go).
	CarryRef *activities.StashRef `json:"carryRef,omitempty"`
}
