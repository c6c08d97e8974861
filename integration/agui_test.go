package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/mcp/mcptest"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// aguiRun is what the official AG-UI client saw of one run (integration/agui/run.mjs).
type aguiRun struct {
	Events  []map[string]any `json:"events"`
	Outcome map[string]any   `json:"outcome"`
	Error   string           `json:"error"` // the run failed (an HTTP error, say)
}

type aguiThread struct {
	Runs     []aguiRun        `json:"runs"`
	Messages []map[string]any `json:"messages"`
}

// runAGUIClient drives a thread with @ag-ui/client's HttpAgent (installed
// by make test-deps from integration/agui's lockfile) and returns what it
// saw.
func runAGUIClient(t *testing.T, url, key, thread string, steps []map[string]string) aguiThread {
	t.Helper()
	stepsJSON, _ := json.Marshal(steps)
	var th aguiThread
	runNode(t, "agui", "@ag-ui/client", &th, url, key, thread, string(stepsJSON))
	return th
}

func aguiTypes(events []map[string]any) []string {
	var out []string
	for _, e := range events {
		out = append(out, e["type"].(string))
	}
	return out
}

// The official AG-UI client (@ag-ui/client 1.0.0, HttpAgent, run by node)
// runs a stored task with an MCP tool that needs approval, on one thread:
// the first run streams the tool call and ends with an interrupt for the
// approval; the second answers it with resume and sees the tool's result
// and the answer; a third sends a follow-up into the same task. Another
// key on the same thread reaches another run, never this one.
func TestAGUIClientRunsAToolUsingTaskWithApprovalsOnOneThread(t *testing.T) {
	h := newHarness(t)
	server := mcptest.New(t)
	startMCPWorker(h, server)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if last := c.Messages[len(c.Messages)-1]; last.Role == "user" && strings.Contains(last.Content, "thanks") {
			return testmodel.Reply{Text: "you are welcome"}
		}
		return mcpModel(c)
	})
	api := newAPI(t, h, withMCPServers("everything"))
	r := api.call("POST", "/v1/prompts/tool-agent/versions", devKey, map[string]any{"text": "You look things up."})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	r = api.call("POST", "/v1/tasks", devKey, toolTask("everything"))
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)

	url := api.url + "/v1/tasks/tool-reply/ag-ui"
	th := runAGUIClient(t, url, callKey, "thread-1", []map[string]string{
		{"user": `call everything__echo {"message":"hello there"}`},
		{"resume": "approve"},
		{"user": "thanks"},
		{"again": "true"},
	})
	require.Len(t, th.Runs, 4)

	first := th.Runs[0]
	require.Equal(t, []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}, aguiTypes(first.Events))
	require.Equal(t, "everything__echo", first.Events[1]["toolCallName"])
	require.JSONEq(t, `{"message":"hello there"}`, first.Events[2]["delta"].(string))
	require.Equal(t, "interrupt", first.Outcome["type"])
	interrupts := first.Outcome["interrupts"].([]any)
	require.Len(t, interrupts, 1)
	require.Equal(t, "everything__echo", interrupts[0].(map[string]any)["metadata"].(map[string]any)["capability"])
	runID := first.Events[0]["metadata"].(map[string]any)["agenttask"].(map[string]any)["runId"].(string)
	require.Regexp(t, `^run-[a-z2-7]{26}$`, runID, "RUN_STARTED names our run")

	second := th.Runs[1]
	types := aguiTypes(second.Events)
	require.Equal(t, "RUN_STARTED", types[0])
	require.Contains(t, types, "TOOL_CALL_RESULT")
	require.Equal(t, []string{"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"}, types[2:4], "%v", types)
	require.Equal(t, "RUN_FINISHED", types[len(types)-1])
	require.Equal(t, "success", second.Outcome["type"])
	require.Equal(t, 1, server.Calls("echo"))
	var answer string
	for _, e := range second.Events {
		if e["type"] == "TEXT_MESSAGE_CONTENT" {
			answer += e["delta"].(string)
		}
		if e["type"] == "TOOL_CALL_RESULT" {
			require.Contains(t, e["content"], "Echo: hello there")
		}
	}
	require.Contains(t, answer, "done: Echo: hello there")

	third := th.Runs[2]
	require.Equal(t, "success", third.Outcome["type"])
	var followUp string
	for _, e := range third.Events {
		if e["type"] == "TEXT_MESSAGE_CONTENT" {
			followUp += e["delta"].(string)
		}
	}
	require.Equal(t, "you are welcome", followUp)

	// A run that brings nothing new is refused: what the run answered is
	// not sent to it again.
	require.Contains(t, th.Runs[3].Error, "400", "%+v", th.Runs[3])
	require.Empty(t, th.Runs[3].Events)

	// The client's conversation holds the messages the server streamed.
	var roles []string
	for _, m := range th.Messages {
		roles = append(roles, m["role"].(string))
	}
	require.Equal(t, []string{"user", "assistant", "tool", "assistant", "user", "assistant"}, roles, "%v", th.Messages)

	// The thread is one run of ours: the approval was decided there, by the key.
	r = api.call("GET", "/v1/runs/"+runID+"/approvals", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	decision := r.JSON["data"].([]any)[0].(map[string]any)["decision"].(map[string]any)
	require.Equal(t, true, decision["approve"])
	require.Equal(t, "approve from the AG-UI client", decision["reason"])

	// The same thread under another key is another run: it does not see
	// this one's conversation.
	other := runAGUIClient(t, url, devKey, "thread-1", []map[string]string{{"user": "thanks"}})
	otherID := other.Runs[0].Events[0]["metadata"].(map[string]any)["agenttask"].(map[string]any)["runId"].(string)
	require.NotEqual(t, runID, otherID)
}

// locateTool is a frontend tool as an AG-UI client offers it.
const locateTool = `[{"name": "locate", "description": "Where the user is, from their browser",
	"parameters": {"type": "object", "properties": {"precise": {"type": "boolean"}}, "required": ["precise"]}}]`

// The official AG-UI client offers a frontend tool: the model's call of it
// ends the first AG-UI run with success and the call pending
// (pendingToolCallIds); the client runs the tool and sends its result as a
// tool message in a second run on the same thread, whose answer reads it
// (and is not streamed back as a TOOL_CALL_RESULT: the client holds it). A
// tool the runtime cannot offer is refused naming it.
func TestAGUIClientSendsAFrontendToolsResultInASecondRun(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(locateModel)
	api := newAPI(t, h)
	r := api.call("POST", "/v1/prompts/locator/versions", devKey, map[string]any{"text": "You help people find their way."})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	r = api.call("POST", "/v1/tasks", devKey, map[string]any{"name": "locator", "prompt": map[string]any{"name": "locator", "version": 1},
		"model": "test/echo", "maxTokens": 400, "input": map[string]any{"maxBytes": 2000}})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)

	url := api.url + "/v1/tasks/locator/ag-ui"
	th := runAGUIClient(t, url, callKey, "thread-tools", []map[string]string{
		{"user": "locate", "tools": locateTool},
		{"toolResult": "Lyon", "tools": locateTool},
		{"user": "thanks"},
	})
	require.Len(t, th.Runs, 3)

	first := th.Runs[0]
	require.Empty(t, first.Error)
	require.Equal(t, []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}, aguiTypes(first.Events))
	require.Equal(t, "locate", first.Events[1]["toolCallName"])
	callID := first.Events[1]["toolCallId"].(string)
	require.JSONEq(t, `{"precise":true}`, first.Events[2]["delta"].(string))
	require.Equal(t, "success", first.Outcome["type"])
	require.Equal(t, []any{callID}, first.Outcome["pendingToolCallIds"])

	second := th.Runs[1]
	require.Empty(t, second.Error)
	types := aguiTypes(second.Events)
	require.Equal(t, "RUN_STARTED", types[0])
	require.NotContains(t, types, "TOOL_CALL_RESULT", "the client holds the result it sent")
	require.Equal(t, "RUN_FINISHED", types[len(types)-1])
	require.Equal(t, "success", second.Outcome["type"])
	require.Empty(t, second.Outcome["pendingToolCallIds"])
	require.Equal(t, `done: Lyon {"precise":true}`, aguiText(second.Events))
	require.Equal(t, "echo: thanks", aguiText(th.Runs[2].Events))

	var roles []string
	for _, m := range th.Messages {
		roles = append(roles, m["role"].(string))
	}
	require.Equal(t, []string{"user", "assistant", "tool", "assistant", "user", "assistant"}, roles, "%v", th.Messages)

	// The call waited in the run as an approval of a client capability,
	// answered by the calling key.
	runID := first.Events[0]["metadata"].(map[string]any)["agenttask"].(map[string]any)["runId"].(string)
	r = api.call("GET", "/v1/runs/"+runID+"/approvals", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	a := r.JSON["data"].([]any)[0].(map[string]any)
	require.Equal(t, true, a["client"])
	require.Equal(t, callID, a["call_id"])
	require.Equal(t, true, a["decision"].(map[string]any)["approve"])

	// A result for a call the run does not have, and a tool the runtime
	// cannot offer, are refused naming the field.
	r = api.call("POST", "/v1/tasks/locator/ag-ui", callKey, map[string]any{"threadId": "thread-tools", "runId": "r9",
		"messages": []any{map[string]any{"id": "m1", "role": "tool", "toolCallId": "call_nope", "content": "x"}}})
	requireProblem(t, r, http.StatusBadRequest, "validation_failed", "messages[0].toolCallId")
	r = api.call("POST", "/v1/tasks/locator/ag-ui", callKey, map[string]any{"threadId": "thread-bad-tool", "runId": "r1",
		"messages": []any{map[string]any{"id": "m1", "role": "user", "content": "locate"}},
		"tools": []any{map[string]any{"name": "locate", "parameters": map[string]any{"type": "object",
			"properties": map[string]any{"zip": map[string]any{"type": "string", "pattern": "^[0-9]+$"}}}}}})
	requireProblem(t, r, http.StatusBadRequest, "validation_failed", "tools[0].parameters.properties.zip.pattern")
}

// aguiText is the text of a run's text messages.
func aguiText(events []map[string]any) string {
	var b strings.Builder
	for _, e := range events {
		if e["type"] == "TEXT_MESSAGE_CONTENT" {
			b.WriteString(e["delta"].(string))
		}
	}
	return b.String()
}
