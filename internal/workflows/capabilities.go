package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// Capabilities are the tools the model can call. A turn that calls one runs
// it here, then calls the model again, committing any inputs queued
// meanwhile (docs/contract.md). An activity capability runs the caller's own
// activity (below); a delegate capability, a sub-task (delegate.go).

// The bounds of a turn's tool exchange, as the Tasks API's worstCase
// counts them (a stored task's tool rounds).
const (
	MaxCapabilityRounds    = maxCapabilityRounds
	MaxScratchBytes        = maxScratchBytes
	MaxActivityResultBytes = maxActivityResultBytes
)

const (
	maxCapabilityRounds = 8         // model calls with capability calls, per turn
	maxResultBytes      = 16 << 10  // a capability result shown to the model
	maxScratchBytes     = 192 << 10 // all of a turn's capability exchange, in every model call argument
)

// runCapability runs one call and returns what the model sees of it. A call
// that cannot run is answered with the reason, so the model can recover.
// segment names the call as approvals do ("t<turn>.c<n>"): a sub-task's
// approvals are listed under it (tree.go); step is the model call that made
// it, where what the call streams belongs.
func (t *task) runCapability(ctx workflow.Context, turn, idx, step int, segment string, call activities.ToolCall) activities.ScratchMessage {
	res := activities.ScratchMessage{ToolCallID: call.ID}
	capability := calledCapability(&t.args.Agent, &t.mcp, call.Name)
	if capability == nil {
		res.Content = fmt.Sprintf("error: there is no capability named %q", call.Name)
		return res
	}
	var content string
	var files []contract.ContentPart
	var err error
	if capability.Kind == contract.CapabilityMCP {
		tool := t.mcp.tool(call.Name)
		if tool == nil {
			res.Content = fmt.Sprintf("error: %q offers its tools as functions named %q%s<tool>; call one of those", capability.Name, capability.Name, contract.MCPFunctionSeparator)
			return res
		}
		content, files, err = t.runMCP(ctx, turn, idx, *capability, *tool, call.Arguments)
	} else if capability.Kind == contract.CapabilityActivity && t.rules.activityCapabilities {
		content, err = runActivity(ctx, *capability, call.Arguments, t.rules.activityTimeouts)
	} else if capability.Kind == contract.CapabilityA2A && t.rules.a2aAgents {
		content, err = t.runA2A(ctx, turn, idx, step, segment, *capability, call)
	} else if capability.Kind == contract.CapabilityClient {
		err = fmt.Errorf("%q is run by the client, which did not answer this call", capability.Name) // unreachable: its call waits for the client (finishCalls)
	} else {
		content, files, err = t.delegate(ctx, turn, idx, segment, *capability, call.Arguments)
	}
	if err != nil {
		res.Content = "error: " + err.Error()
		return res
	}
	limit := maxResultBytes
	if capability.Kind == contract.CapabilityActivity || capability.Kind == contract.CapabilityMCP || capability.Kind == contract.CapabilityA2A {
		limit = maxActivityResultBytes // checked by runActivity, and cut by the A2A activities
	}
	if len(content) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(content[cut]) {
			cut--
		}
		note := " [cut: the rest is in the sub-task's conversation]"
		if capability.Kind != contract.CapabilityDelegate {
			note = " [cut: the result was longer]"
		}
		content = content[:cut] + note
	}
	res.Content, res.Files = content, files
	v, _ := json.Marshal(content)
	t.collectValue(ctx, call.Name, v) // a capability's result is collected
	return res
}

// clientResult is what the model reads of a client capability's call its
// client answered (a, approved): the decide's result, taken from the
// approval (which keeps no copy) and collected as any capability's is.
func (t *task) clientResult(ctx workflow.Context, a *approvalRecord, call activities.ToolCall) *activities.ScratchMessage {
	content := a.takeResult()
	v, _ := json.Marshal(content)
	t.collectValue(ctx, call.Name, v)
	return &activities.ScratchMessage{ToolCallID: call.ID, Content: content}
}

// calledCapability is the capability of agent the model calls as function
// name: one of the agent's, or the mcp capability whose tool (of those
// listed) it is.
func calledCapability(agent *contract.AgentSpec, listed *mcpState, name string) *contract.Capability {
	if tool := listed.tool(name); tool != nil {
		name = tool.Capability
	}
	for i := range agent.Capabilities {
		if agent.Capabilities[i].Name == name {
			return &agent.Capabilities[i]
		}
	}
	return nil
}

// maxActivityResultBytes bounds an activity capability's result.
const maxActivityResultBytes = 64 << 10

// checkCallArguments checks an activity (rules.activityCapabilities) or a
// client capability's (rules.clientTools) arguments against its
// parameters in agent; the violations go back to the model ("" when they
// fit).
func checkCallArguments(agent *contract.Agent, rules rules, c *contract.Capability, args string) string {
	if !(c.Kind == contract.CapabilityActivity && rules.activityCapabilities) && !(c.Kind == contract.CapabilityClient && rules.clientTools) {
		return ""
	}
	if vs := agent.CheckCapabilityArgs(c.Name, json.RawMessage(args)); len(vs) > 0 {
		return fmt.Sprintf("error: the arguments do not fit %q's parameters: %s; call it again with arguments that do", c.Name, contract.JoinViolations(vs))
	}
	return ""
}

// runActivity runs an activity capability: the caller's activity, on its
// task queue, with the model's arguments as its one JSON argument. Its
// JSON result is what the model reads; a failure too (its type and
// message), once the retry policy gives up or at once when non-retryable.
// bounded: rules.activityTimeouts.
func runActivity(ctx workflow.Context, c contract.Capability, args string, bounded bool) (string, error) {
	if len(args) == 0 {
		args = "{}"
	}
	p := c.RetryPolicy()
	opts := workflow.ActivityOptions{
		TaskQueue:           c.TaskQueue, // empty (older rules only): the task's own
		StartToCloseTimeout: c.Timeout(),
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: p.InitialInterval, BackoffCoefficient: p.BackoffCoefficient,
			MaximumInterval: p.MaximumInterval, MaximumAttempts: int32(p.MaximumAttempts)},
		Summary: fmt.Sprintf("capability %s", c.Name),
	}
	if bounded {
		// A queue nobody polls (a typo) or a worker that never finishes
		// ends the call, not the turn: the model reads why.
		opts.ScheduleToStartTimeout, opts.ScheduleToCloseTimeout = c.StartWait(), c.CallWait()
	}
	var out json.RawMessage
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), c.Activity, json.RawMessage(args)).Get(ctx, &out)
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		var ae *temporal.ApplicationError
		var te *temporal.TimeoutError
		switch {
		case errors.As(err, &ae):
			typ := ae.Type()
			if typ == "" {
				typ = "error"
			}
			return "", fmt.Errorf("%s: %s", typ, truncate(ae.Message(), 2_000))
		case errors.As(err, &te):
			return "", timeoutMessage(c, te)
		}
		return "", fmt.Errorf("the activity %q failed: %s", c.Activity, truncate(err.Error(), 2_000))
	}
	if len(out) > maxActivityResultBytes {
		return "", fmt.Errorf("the activity %q returned %d bytes, more than %d", c.Activity, len(out), maxActivityResultBytes)
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	return string(out), nil
}

// timeoutMessage tells the model which bound an activity call met, naming
// the activity and its task queue.
func timeoutMessage(c contract.Capability, te *temporal.TimeoutError) error {
	switch te.TimeoutType() {
	case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START:
		return fmt.Errorf("TIMEOUT: no worker on task queue %q picked up the activity %q within %s (is a worker that registers it running on that queue?); the call did not run", c.TaskQueue, c.Activity, c.StartWait())
	case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE:
		return fmt.Errorf("TIMEOUT: the activity %q on task queue %q did not finish within %s, all attempts included", c.Activity, c.TaskQueue, c.CallWait())
	}
	return fmt.Errorf("TIMEOUT: the activity %q on task queue %q did not finish in time (%s)", c.Activity, c.TaskQueue, te.TimeoutType())
}
