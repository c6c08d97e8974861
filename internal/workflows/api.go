// Package workflows holds the AgentTask workflow: one Temporal workflow per
// agent task, holding its conversation (seed 000) as workflow state.
//
// The contract it implements (names, arguments, replies) is public, in
// package contract (contract/workflow.go); this file names it here, so the
// workflow code reads as before. Every name is API that services in any
// language code against: add, never rename.
package workflows

import (
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
	ErrQueueBusy               = contract.ErrQueueBusy
	MaxUpdatesInFlight         = contract.MaxUpdatesInFlight
	ErrAnswerPending           = contract.ErrAnswerPending
	MaxCallsPerResponse        = contract.MaxCallsPerResponse
)

// StartArgs is the workflow's one argument: what a caller sends (the
// contract's StartArgs, whose fields it promotes, so its JSON is flat as
// before) and what the runtime itself writes when it continues as new.
type StartArgs struct {
	contract.StartArgs

	// Carry is written by the runtime itself when it continues as new: the
	// state of the previous run. Callers never set it.
	Carry *Carry `json:"carry,omitempty"`
	// CarryRef, written by the runtime in place of everything else when the
	// next run's argument would be large: the stash holds it (largestate.go).
	CarryRef *activities.StashRef `json:"carryRef,omitempty"`
}
