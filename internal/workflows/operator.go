package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
)

// What an operator sees of a task in the Web UI: the AgentState search
// attribute (rules.agentStateAttribute) to list tasks by, and the current details.

var agentStateKey = temporal.NewSearchAttributeKeyKeyword(contract.SearchAttributeAgentState)

// detailsCut bounds the last input and output in the current details.
const detailsCut = 200

// agentState is the AgentState the task is in now.
func agentState(state contract.State, retrying bool) string {
	switch {
	case state == contract.StateShaping:
		return contract.AgentStateShaping
	case state == contract.StateAwaitingApproval:
		return contract.AgentStateAwaitingApproval
	case state == contract.StateAwaitingBudget:
		return contract.AgentStateAwaitingBudget
	case retrying:
		return contract.AgentStateRetrying
	}
	return contract.AgentStateActive
}

// knownAgentState reads the AgentState the run started with: "" when the
// start did not set it (the attribute may not be registered on the server,
// and an upsert of an unknown attribute would fail the workflow task).
func knownAgentState(ctx workflow.Context) string {
	v, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(agentStateKey)
	if !ok {
		return ""
	}
	return v
}

// trackAgentState upserts AgentState when it changed: one event per change,
// never per turn. on: the run's rules track it (rules.agentStateAttribute)
// and its state is known; retrying: a call waits out an outage.
func trackAgentState(ctx workflow.Context, l *lifecycle, on, retrying bool, logger log.Logger) {
	if !on || l.trackedAgentState() == "" {
		return
	}
	if now := agentState(l.current(), retrying); now != l.trackedAgentState() {
		if err := workflow.UpsertTypedSearchAttributes(ctx, agentStateKey.ValueSet(now)); err != nil {
			logger.Warn("AgentState not upserted", "error", err)
			return
		}
		l.agentStateUpserted(now)
	}
}

// lastEntryLines are the last input and output, cut short and masked.
func lastEntryLines(c *Carry, sec secrets) string {
	oneLine := func(io contract.TaskIO) string { return strings.Join(strings.Fields(contract.TextOf(io)), " ") }
	in, out := c.lastText(contract.TypeInput, oneLine), c.lastText(contract.TypeOutput, oneLine)
	if q := c.queuedInputs(); len(q) > 0 {
		in = oneLine(q[len(q)-1].TaskIO)
	}
	var b strings.Builder
	if in != "" {
		fmt.Fprintf(&b, "\n\nlast input: %s", truncate(sec.mask(in), detailsCut))
	}
	if out != "" {
		fmt.Fprintf(&b, "\n\nlast output: %s", truncate(sec.mask(out), detailsCut))
	}
	return b.String()
}
