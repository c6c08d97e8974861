// Package workflows holds the AgentTask workflow: one Temporal workflow per
// agent task, holding its conversation (docs/contract.md) as workflow state.
//
// The contract it implements (names, arguments, replies) is public, in
// package contract (contract/workflow.go): every name there is API that
// services in any language code against: add, never rename.
package workflows

import (
	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
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
