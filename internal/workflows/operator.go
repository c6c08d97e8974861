package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
)

// What an operator sees of a task in the Web UI: the AgentState search
// attribute (rules.agentStateAttribute) to list tasks by, and the current details.

var agentStateKey = temporal.NewSearchAttributeKeyKeyword(SearchAttributeAgentState)

// detailsCut bounds the last input and output in the current details.
const detailsCut = 200

// agentState is the AgentState the task is in now.
func (t *task) agentState() string {
	switch {
	case t.life.state == StateShaping:
		return AgentStateShaping
	case t.life.state == StateAwaitingApproval:
		return AgentStateAwaitingApproval
	case t.life.state == contract.StateAwaitingBudget:
		return contract.AgentStateAwaitingBudget
	case t.retrying() != nil:
		return AgentStateRetrying
	}
	return AgentStateActive
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
// never per turn.
func (t *task) trackAgentState(ctx workflow.Context) {
	if !t.rules.agentStateAttribute || t.life.agentState == "" || t.durable == nil {
		return
	}
	if now := t.agentState(); now != t.life.agentState {
		if err := workflow.UpsertTypedSearchAttributes(ctx, agentStateKey.ValueSet(now)); err != nil {
			t.logger.Warn("AgentState not upserted", "error", err)
			return
		}
		t.life.agentState = now
	}
}

// lastEntryLines are the last input and output, cut short and masked.
func (t *task) lastEntryLines() string {
	var in, out string
	for i := len(t.durable.Held) - 1; i >= 0 && (in == "" || out == ""); i-- {
		m := t.durable.Held[i].Msg
		txt := strings.Join(strings.Fields(contract.TextOf(m.TaskIO)), " ")
		if m.Type == contract.TypeInput && in == "" {
			in = txt
		} else if m.Type == contract.TypeOutput && out == "" {
			out = txt
		}
	}
	if n := len(t.durable.Queue); n > 0 {
		in = strings.Join(strings.Fields(contract.TextOf(t.durable.Queue[n-1].TaskIO)), " ")
	}
	var b strings.Builder
	if in != "" {
		fmt.Fprintf(&b, "\n\nlast input: %s", truncate(t.mask(in), detailsCut))
	}
	if out != "" {
		fmt.Fprintf(&b, "\n\nlast output: %s", truncate(t.mask(out), detailsCut))
	}
	return b.String()
}
