package tasksapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/taskdef"
	"github.com/agenttask/agenttask/internal/workflows"
)

// Frontend tools (docs/ag-ui.md#frontend-tools). The thread's first AG-UI
// run gives the run's agent a client capability per tool of its `tools`;
// the model's call of one waits in the run as an approval does, and the
// AG-UI run ends there with RUN_FINISHED (success, pendingToolCallIds).
// The client runs the tool and sends its result as a `tool` message in
// the thread's next AG-UI run, which approves the call with it (decide's
// result): the model reads it, and the turn goes on.

// aguiTool is a frontend tool of RunAgentInput.
type aguiTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// maxAGUITools bounds a thread's frontend tools, as a stored task's
// capabilities are bounded.
const maxAGUITools = taskdef.MaxCapabilities

// maxToolDescriptionBytes bounds a frontend tool's description.
const maxToolDescriptionBytes = 4_000

// withClientTools is agent with a client capability for each of tools,
// checked as the runtime checks an agent; a refusal names the tool.
func withClientTools(agent contract.AgentSpec, tools []aguiTool) (contract.AgentSpec, error) {
	if len(tools) == 0 {
		return agent, nil
	}
	if len(tools) > maxAGUITools {
		return agent, invalid("tools", fmt.Sprintf("%d frontend tools, more than the %d a thread may offer", len(tools), maxAGUITools))
	}
	first := len(agent.Capabilities)
	agent.Capabilities = append([]contract.Capability{}, agent.Capabilities...)
	for i, t := range tools {
		field := fmt.Sprintf("tools[%d]", i)
		for _, c := range agent.Capabilities {
			if c.Name == t.Name {
				return agent, invalid(field+".name", fmt.Sprintf("%q is the name of a tool of the task (or of an earlier frontend tool); name the frontend tool differently", t.Name))
			}
		}
		if len(t.Description) > maxToolDescriptionBytes {
			return agent, invalid(field+".description", fmt.Sprintf("%d bytes, more than %d", len(t.Description), maxToolDescriptionBytes))
		}
		agent.Capabilities = append(agent.Capabilities, contract.Capability{Name: t.Name, Kind: contract.CapabilityClient,
			Description: t.Description, Parameters: t.Parameters})
	}
	if _, err := workflows.CheckAgent("agent", agent); err != nil {
		msg := contract.MessageOf(err)
		// agent.capabilities[k]...: the tool i = k - first, when it is one.
		var k int
		var rest string
		if n, _ := fmt.Sscanf(msg, "agent.capabilities[%d]", &k); n == 1 && k >= first {
			if _, after, ok := strings.Cut(msg, "]"); ok {
				rest = after
			}
			path, detail, _ := strings.Cut(fmt.Sprintf("tools[%d]%s", k-first, rest), ": ")
			return agent, invalid(path, detail)
		}
		return agent, invalid("tools", msg)
	}
	return agent, nil
}

// aguiAnswers applies what an AG-UI run answers of what the thread's run
// waits for: its resume entries (approvals, aguiResume) and its trailing
// `tool` messages (frontend tool calls, aguiToolResults). It returns the
// approvals the run still waits for that were asked before this request
// (the AG-UI run ends at them at once: no event will ask them again) and
// the frontend tool calls answered (their results are the client's own
// messages, not streamed back to it).
func (s *server) aguiAnswers(ctx context.Context, id string, input aguiInput) (waiting []contract.Approval, answeredCalls map[string]bool, err error) {
	list, err := s.starter().Approvals(ctx, id)
	if err != nil {
		return nil, nil, approvalProblem(id, err)
	}
	answered := map[string]bool{}
	if err := s.aguiResume(ctx, id, input.Resume, answered); err != nil {
		return nil, nil, err
	}
	answeredCalls = map[string]bool{}
	if err := s.aguiToolResults(ctx, id, input.Messages, list, answered, answeredCalls); err != nil {
		return nil, nil, err
	}
	for _, a := range list {
		if a.Decision == nil && !answered[a.ID] {
			waiting = append(waiting, a)
		}
	}
	return waiting, answeredCalls, nil
}

// aguiToolResults answers the frontend tool calls whose results the AG-UI
// run's newest messages (its trailing `tool` messages) carry: each
// approves the run's pending call of that ID (in list) with its content
// (or, with `error`, refuses it with the error as the reason). A call
// answered before (a repeated request) is skipped. The approvals answered
// and their call IDs are added to answered and calls.
func (s *server) aguiToolResults(ctx context.Context, id string, messages []aguiMessage, list []contract.Approval, answered, calls map[string]bool) error {
	from := len(messages)
	for from > 0 && messages[from-1].Role == "tool" {
		from--
	}
	for i := from; i < len(messages); i++ {
		m := messages[i]
		field := fmt.Sprintf("messages[%d]", i)
		var a *contract.Approval
		for j := range list {
			if list[j].Client && list[j].CallID == m.ToolCallID && m.ToolCallID != "" {
				a = &list[j]
			}
		}
		if a == nil {
			return invalid(field+".toolCallId", fmt.Sprintf("the thread's run has no frontend tool call %q: a tool message answers one of the calls a run ended at (RUN_FINISHED's pendingToolCallIds)", m.ToolCallID))
		}
		answered[a.ID], calls[a.CallID] = true, true
		if a.Decision != nil {
			continue // answered by an earlier request: this one repeats it
		}
		d := contract.DecideArgs{ID: a.ID, By: caller(ctx)}
		if m.Error != "" {
			no := false
			d.Approve, d.Reason = &no, truncateBytes(m.Error, maxReasonBytes)
		} else {
			content, perr := toolContent(field, m.Content)
			if perr != nil {
				return perr
			}
			if len(content) > contract.MaxClientResultBytes {
				return invalid(field+".content", fmt.Sprintf("%d bytes, more than the %d a frontend tool's result may have", len(content), contract.MaxClientResultBytes))
			}
			yes := true
			d.Approve, d.Result = &yes, &content
		}
		if _, err := s.starter().Decide(ctx, id, d); err != nil {
			return approvalProblem(id, err)
		}
	}
	return nil
}

// toolContent is a tool message's content: a string, or text parts.
func toolContent(field string, raw json.RawMessage) (string, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String(), nil
	}
	return "", invalid(field+".content", "a tool message's content must be a string (the tool's result)")
}

// truncateBytes cuts s to at most n bytes, on a character boundary.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n]
}
