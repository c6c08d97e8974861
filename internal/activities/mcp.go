package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mcp"
)

// MCP tools (capabilities of kind mcp). The workflow lists the tools once
// per run (ListMCPTools: the list is recorded in its history, so replay
// never asks the server again) and calls each as an activity
// (CallMCPTool). Servers come from the operator (AGENT_MCP_SERVERS), never
// from the task: a capability names a server, not a URL.

// Activity type names (API: never renamed).
const (
	ListMCPToolsName = "ListMCPTools"
	CallMCPToolName  = "CallMCPTool"
)

// ErrMCPUnavailable is the type of a retryable failure to reach an MCP
// server: waited out like a model outage.
const ErrMCPUnavailable = contract.ErrMCPUnavailable

// MaxMCPToolsBytes bounds the listed tools of a task, all capabilities
// together: they travel in every model call's argument.
const MaxMCPToolsBytes = 32 << 10

// MCPCapability is what ListMCPTools needs of one mcp capability.
type MCPCapability struct {
	Name   string   `json:"name"`
	Server string   `json:"server"`
	Tools  []string `json:"tools,omitempty"` // empty: every tool the server lists
}

// ListMCPToolsInput lists the tools of an agent's mcp capabilities.
type ListMCPToolsInput struct {
	Capabilities []MCPCapability `json:"capabilities"`
	// Taken are the names the model already sees (the agent's other
	// capabilities, the built-ins): a function may not clash with them.
	Taken []string `json:"taken,omitempty"`
	Retry Retry    `json:"retry"`
}

// MCPTool is one tool offered to the model, as the function Function.
type MCPTool struct {
	Function    string          `json:"function"`
	Capability  string          `json:"capability"`
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// Hints are the tool's effects by its annotations (nil: listed by a
	// worker before rules version 14, which kept none: treated as
	// destructive and open-world).
	Hints *mcp.Hints `json:"hints,omitempty"`
}

// ListMCPToolsResult is every offered tool, in the capabilities' order and
// then by tool name: a stable order, so requests stay cache-friendly.
type ListMCPToolsResult struct {
	Tools []MCPTool `json:"tools"`
}

// ListMCPTools lists the tools of each capability's server. A server this
// worker does not list, or a named tool the server does not have, is a
// refusal (INVALID_INPUT); an unreachable server is waited out.
func (a *Activities) ListMCPTools(ctx context.Context, in ListMCPToolsInput) (*ListMCPToolsResult, error) {
	taken := map[string]bool{}
	for _, n := range in.Taken {
		taken[n] = true
	}
	res := &ListMCPToolsResult{Tools: []MCPTool{}}
	for _, c := range in.Capabilities {
		if a.MCP == nil || !a.MCP.Has(c.Server) {
			return nil, final(contract.Invalid("capability %q: %q is not an MCP server this worker lists (%s: %s); name one of those, or ask the operator to add it", c.Name, c.Server, mcp.EnvServers, a.mcpNames()))
		}
		listed, err := a.MCP.ListTools(ctx, c.Server)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err() // the worker stops: another takes the listing
			}
			if mcp.IsBound(err) {
				return nil, final(contract.Invalid("capability %q: %s", c.Name, clip(err.Error(), 2000)))
			}
			// Anything else is waited out (within modelRetryTimeout): an
			// outage, refused credentials, a server answering nonsense
			// until it is fixed.
			return nil, a.waitOut(ctx, in.Retry, temporal.NewApplicationError(fmt.Sprintf("listing the tools of MCP server %q: %s", c.Server, clip(err.Error(), 1000)), ErrMCPUnavailable))
		}
		tools, err := chooseTools(c, listed, taken)
		if err != nil {
			return nil, final(err)
		}
		res.Tools = append(res.Tools, tools...)
	}
	if b, _ := json.Marshal(res.Tools); len(b) > MaxMCPToolsBytes {
		return nil, final(contract.Invalid("the MCP tools of this agent take %d bytes of definitions, more than %d; name fewer of them in each capability's \"tools\"", len(b), MaxMCPToolsBytes))
	}
	return res, a.waitOut(ctx, in.Retry, nil)
}

// chooseTools picks the capability's tools from a server's list and names
// their functions, refusing names that are too long or clash.
func chooseTools(c MCPCapability, listed []mcp.Tool, taken map[string]bool) ([]MCPTool, error) {
	byName := map[string]mcp.Tool{}
	for _, t := range listed {
		byName[t.Name] = t
	}
	picked := listed
	if len(c.Tools) > 0 {
		picked = nil
		for _, name := range c.Tools {
			t, ok := byName[name]
			if !ok {
				return nil, contract.Invalid("capability %q: the MCP server %q has no tool %q; it lists: %s", c.Name, c.Server, name, toolNames(listed))
			}
			picked = append(picked, t)
		}
	}
	var out []MCPTool
	for _, t := range picked {
		fn := contract.MCPFunctionName(c.Name, t.Name)
		switch {
		case len(fn) > contract.MaxFunctionNameChars:
			return nil, contract.Invalid("capability %q: the function for tool %q, %q, is over %d characters; give the capability a shorter name", c.Name, t.Name, fn, contract.MaxFunctionNameChars)
		case taken[fn]:
			return nil, contract.Invalid("capability %q: the function for tool %q, %q, clashes with another the model sees; rename the capability or name fewer tools", c.Name, t.Name, fn)
		}
		taken[fn] = true
		hints := t.Hints
		out = append(out, MCPTool{Function: fn, Capability: c.Name, Server: c.Server, Tool: t.Name, Description: t.Description, InputSchema: t.InputSchema, Hints: &hints})
	}
	return out, nil
}

func toolNames(ts []mcp.Tool) string {
	if len(ts) == 0 {
		return "(no tools)"
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

func (a *Activities) mcpNames() string {
	if a.MCP == nil {
		return "(none)"
	}
	if n := a.MCP.Names(); len(n) > 0 {
		return strings.Join(n, ", ")
	}
	return "(none)"
}

// mcpUnavailable is a failure to reach a server, retried (and waited out).
func mcpUnavailable(server string, err error) error {
	return temporal.NewApplicationError(fmt.Sprintf("the MCP server %q is unavailable: %s", server, clip(err.Error(), 1000)), ErrMCPUnavailable)
}

// CallMCPToolInput is one call of an MCP tool.
type CallMCPToolInput struct {
	Tool      MCPTool         `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Mount and TaskID say where files the tool returns are written (the
	// task's own space); a nil Mount: the agent has none.
	Mount  *contract.MountSpec `json:"mount,omitempty"`
	TaskID string              `json:"task_id"`
	// FilePrefix names this call's files: FilePrefix-1.png, ...
	FilePrefix string `json:"file_prefix"`
	Retry      Retry  `json:"retry"`
}

// CallMCPToolResult is what the model reads of a call: its text, and the
// files it returned, now in the task's mount.
type CallMCPToolResult struct {
	Content string                 `json:"content"`
	Files   []contract.ContentPart `json:"files,omitempty"`
	IsError bool                   `json:"is_error,omitempty"`
}

// CallMCPTool checks the model's arguments against the tool's input schema
// and calls it. What the tool says, an error result included, is the
// model's to read; so is a failure no retry fixes. An unreachable server
// is waited out (within the capability's timeout).
func (a *Activities) CallMCPTool(ctx context.Context, in CallMCPToolInput) (*CallMCPToolResult, error) {
	ctx, span := startToolSpan(ctx, in.Tool) // genai.go
	res, err := a.callMCPTool(ctx, in)
	endToolSpan(span, res, err)
	return res, err
}

func (a *Activities) callMCPTool(ctx context.Context, in CallMCPToolInput) (*CallMCPToolResult, error) {
	if a.MCP == nil || !a.MCP.Has(in.Tool.Server) {
		return &CallMCPToolResult{IsError: true, Content: fmt.Sprintf("error: this worker no longer lists the MCP server %q", in.Tool.Server)}, nil
	}
	args := in.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if vs := mcp.CheckArguments(in.Tool.InputSchema, args); len(vs) > 0 {
		return &CallMCPToolResult{IsError: true, Content: fmt.Sprintf("error: the arguments do not fit the input schema of %q: %s; call it again with arguments that do",
			in.Tool.Function, strings.Join(vs, "; "))}, nil
	}
	r, err := a.MCP.CallTool(ctx, in.Tool.Server, in.Tool.Tool, args)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the worker stops or the turn was canceled: not the model's to read
		}
		if mcp.WaitedOut(err) {
			return nil, a.waitOut(ctx, in.Retry, mcpUnavailable(in.Tool.Server, err))
		}
		return &CallMCPToolResult{IsError: true, Content: "error: " + clip(err.Error(), 2000)}, a.waitOut(ctx, in.Retry, nil)
	}
	out, err := a.renderMCPResult(ctx, in, r)
	if err != nil {
		return nil, a.waitOut(ctx, in.Retry, err) // the mount's storage: waited out too
	}
	return out, a.waitOut(ctx, in.Retry, nil)
}
