package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// MCP tools (rules.mcpTools). An mcp capability names a server the
// worker's operator lists; each run lists the tools once, before its first
// turn (ListMCPTools, recorded in history, so replay never asks the server
// and a turn that calls no tool costs what it did), and offers each as the
// function "<capability>__<tool>". A call runs as one activity (CallMCPTool)
// under the capability's condition, approval, startTimeout and timeout, as
// an activity capability's call does; an outage of the server is waited
// out within that timeout.

// mcpState is what this run listed.
type mcpState struct {
	tools []activities.MCPTool
}

var (
	mcpListOptions = workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: 5, NonRetryableErrorTypes: []string{contract.ErrInvalidInput}},
	}
	mcpCallRetry = temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		NonRetryableErrorTypes: []string{contract.ErrInvalidInput}} // attempts: until the capability's timeout
)

// mcpCapabilities are the agent's capabilities of kind mcp.
func mcpCapabilities(agent *contract.AgentSpec) []activities.MCPCapability {
	var caps []activities.MCPCapability
	for _, c := range agent.Capabilities {
		if c.Kind == contract.CapabilityMCP {
			caps = append(caps, activities.MCPCapability{Name: c.Name, Server: c.Server, Tools: c.Tools})
		}
	}
	return caps
}

// listMCPTools lists the tools of the agent's mcp capabilities. A server
// this worker does not list, or a named tool its server lacks, fails the
// task with INVALID_INPUT before any model call; an unreachable server is
// waited out like a model outage.
func (t *task) listMCPTools(ctx workflow.Context) error {
	caps := mcpCapabilities(&t.args.Agent)
	if !t.rules.mcpTools || len(caps) == 0 {
		return nil
	}
	taken := []string{"save", "finish"}
	for _, c := range t.args.Agent.Capabilities {
		taken = append(taken, c.Name)
	}
	in := activities.ListMCPToolsInput{Capabilities: caps, Taken: taken, Retry: t.waitOut().retry("mcp:list")}
	o := t.waitOut().options(mcpListOptions, 0)
	o.Summary = fmt.Sprintf("list the tools of %d MCP capabilities", len(caps))
	var res activities.ListMCPToolsResult
	done := t.outages.waiting(in.Retry.Call)
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), activities.ListMCPToolsName, in).Get(ctx, &res)
	done()
	if err != nil {
		return unwrapActivityError(err)
	}
	t.mcp.tools = res.Tools
	return nil
}

// tool is the listed tool the model calls as function, or nil.
func (m *mcpState) tool(function string) *activities.MCPTool {
	for i := range m.tools {
		if m.tools[i].Function == function {
			return &m.tools[i]
		}
	}
	return nil
}

// listed are the tools this run listed, as model calls offer them.
func (m *mcpState) listed() []activities.MCPTool { return m.tools }

// needsApproval: a call of an MCP tool its server marks destructive or
// open-world (or lists without annotations, which the MCP specification
// reads as both) waits for a person's decision, unless the capability's
// autoApprove names the tool or "*" (on: rules.mcpHints). A listing
// without hints (an older worker's) counts as unannotated.
func (m *mcpState) needsApproval(on bool, c *contract.Capability, function string) bool {
	if !on || c == nil || c.Kind != contract.CapabilityMCP {
		return false
	}
	tool := m.tool(function)
	if tool == nil {
		return false
	}
	for _, n := range c.AutoApprove {
		if n == "*" || n == tool.Tool {
			return false
		}
	}
	h := tool.Hints
	return h == nil || (!h.ReadOnly && h.Destructive) || h.OpenWorld
}

// runMCP calls one MCP tool. What the model reads is its result, or why the
// call did not run (a bound met, an outage outlived).
func (t *task) runMCP(ctx workflow.Context, turn, idx int, c contract.Capability, tool activities.MCPTool, args string) (string, []contract.ContentPart, error) {
	in := activities.CallMCPToolInput{Tool: tool, Arguments: []byte(args), TaskID: t.life.id(), Mount: t.args.Agent.Mount,
		FilePrefix: fmt.Sprintf("mcp/%s/t%d-c%d", c.Name, turn, idx),
		Retry:      activities.Retry{Call: fmt.Sprintf("mcp:t%d:c%d", turn, idx), Timeout: c.CallWait().String()}}
	if len(args) == 0 || !json.Valid([]byte(args)) {
		in.Arguments = []byte("{}")
	}
	p := mcpCallRetry
	o := workflow.ActivityOptions{
		ScheduleToStartTimeout: c.StartWait(),
		StartToCloseTimeout:    c.CallWait(),
		ScheduleToCloseTimeout: c.CallWait() + time.Minute, // the retry timeout ends it first; this is a backstop
		RetryPolicy:            &p,
		Summary:                fmt.Sprintf("MCP %s · %s", tool.Server, tool.Tool),
	}
	var res activities.CallMCPToolResult
	done := t.outages.waiting(in.Retry.Call)
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), activities.CallMCPToolName, in).Get(ctx, &res)
	done()
	if err != nil {
		if ctx.Err() != nil {
			return "", nil, err
		}
		var te *temporal.TimeoutError
		if errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
			return "", nil, fmt.Errorf("TIMEOUT: no worker picked up the call of %q within %s; the call did not run", tool.Function, c.StartWait())
		}
		if errors.As(err, &te) {
			return "", nil, fmt.Errorf("TIMEOUT: the call of %q did not finish within %s", tool.Function, c.CallWait())
		}
		return "", nil, errors.New(truncate(contract.MessageOf(unwrapActivityError(err)), 2_000))
	}
	return res.Content, res.Files, nil
}
