package integration

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/agents"
	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mcp/mcptest"
	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/starter"
)

// withMCPServers tells the API the MCP servers the workers list.
func withMCPServers(names ...string) apiOption {
	return func(c *tasksapi.Config) { c.MCPServers = names }
}

// toolTask is a stored task whose runs may call the test MCP server's echo
// tool, each call approved by a person first.
func toolTask(server string) map[string]any {
	return map[string]any{
		"name": "tool-reply", "prompt": map[string]any{"name": "tool-agent", "version": 1},
		"model": "test/echo", "maxTokens": 400, "input": map[string]any{"maxBytes": 2000},
		"capabilities": []any{map[string]any{"name": "everything", "kind": "mcp", "server": server,
			"tools": []string{"echo"}, "approval": "always"}},
	}
}

// A stored task with an MCP capability is created, run and approved over
// HTTP alone, and every task streams: GET /v1/runs/{id}/events?events=all
// shows the turn's start, the model's text, the tool call it asked for,
// the approval asked for and decided, the call's result and the answer. The first model call is cut mid-text and retried: its text is
// withdrawn once (attempt.retracted) and never repeated, the tool call is
// shown once, and a client that reconnects mid-turn (while the call waits
// for its approval) reads the rest without a gap or a repeat. The seed's
// stream of the same run shows only the answer's text and done.
func TestStoredTaskWithMCPToolsStreamsAndIsApprovedOverHTTP(t *testing.T) {
	h := newHarness(t)
	server := mcptest.New(t)
	startMCPWorker(h, server)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if c.Seq == 1 { // cut after its first delta: Temporal tries the call again
			return testmodel.Reply{Chunks: []string{"Let me ", "look. "}, BreakAfter: 1}
		}
		return mcpModel(c)
	})
	api := newAPI(t, h, withMCPServers("everything"))
	r := api.call("POST", "/v1/prompts/tool-agent/versions", devKey, map[string]any{"text": "You look things up."})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)

	r = api.call("POST", "/v1/tasks", devKey, toolTask("nowhere"))
	requireProblem(t, r, http.StatusBadRequest, tasksapi.CodeValidationFailed, "capabilities[0].server")
	r = api.call("POST", "/v1/tasks", devKey, withField(toolTask("everything"), "capabilities", []any{map[string]any{"name": "x", "kind": "delegate"}}))
	requireProblem(t, r, http.StatusBadRequest, tasksapi.CodeValidationFailed, "capabilities[0].kind")
	r = api.call("POST", "/v1/tasks", devKey, toolTask("everything"))
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	withTools := r.data()["worstCase"].(map[string]any)["inputTokens"].(float64)
	caps := r.data()["capabilities"].([]any)
	require.Equal(t, "everything", caps[0].(map[string]any)["server"], "read back as created")
	plain := api.call("PUT", "/v1/tasks/tool-reply", devKey, withField(toolTask("everything"), "capabilities", nil))
	require.Equal(t, http.StatusOK, plain.Status, "%s", plain.Raw)
	require.Less(t, plain.data()["worstCase"].(map[string]any)["inputTokens"].(float64), withTools/10, "tool rounds dominate the worst case")
	require.Equal(t, http.StatusOK, api.call("PUT", "/v1/tasks/tool-reply", devKey, toolTask("everything")).Status)

	seed := openEvents(t, api.url, "/v1/tasks/tool-reply/run", callKey,
		map[string]any{"input": `call everything__echo {"message":"hello there"}`, "stream": true})
	require.Equal(t, http.StatusOK, seed.Resp.StatusCode)
	id := seed.Resp.Header.Get("X-Request-Id")

	// Mid-turn: the call waits for its approval. A client reads every
	// event so far, then leaves.
	early := openEvents(t, api.url, "/v1/runs/"+id+"/events?events=all", viewKey, nil)
	before := early.until("tool_call.started", 60*time.Second)
	early.Close()
	var pending map[string]any
	eventually(t, 60*time.Second, "the call's approval pending", func() bool {
		r := api.call("GET", "/v1/runs/"+id+"/approvals", viewKey, nil)
		list, _ := r.JSON["data"].([]any)
		if len(list) != 1 {
			return false
		}
		pending = list[0].(map[string]any)
		return pending["decision"] == nil
	})
	require.Equal(t, "everything__echo", pending["capability"])
	require.Equal(t, 0, server.Calls("echo"), "nothing ran before the approval")
	r = api.call("POST", "/v1/runs/"+id+"/approvals/"+pending["id"].(string), callKey, map[string]any{"approve": true, "reason": "fine"})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)

	// The seed's stream: the answer's text and done, nothing else.
	seedEvents := seed.ended(60 * time.Second)
	for _, e := range seedEvents {
		require.Contains(t, []string{"text", "done"}, e.typ(), "%v", eventData(seedEvents))
	}
	require.Equal(t, "done", seedEvents[len(seedEvents)-1].typ())
	require.Contains(t, lastAnswerText(seedEvents), "Echo: hello there")
	require.Equal(t, 1, server.Calls("echo"))

	// The reconnect after the last event it read goes on without a gap.
	last := before[len(before)-1].ID
	again := openEvents(t, api.url, "/v1/runs/"+id+"/events?events=all", viewKey, nil, "Last-Event-ID", strconv.FormatInt(last, 10))
	rest := again.until("done", 30*time.Second)
	again.Close()
	all := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil, "Accept", "text/event-stream; events=all")
	whole := all.until("done", 30*time.Second)
	all.Close()
	require.Equal(t, whole, append(append([]sseEvent{}, before...), rest...), "before and after the reconnect: the whole stream, once")
	requireIDsFrom(t, 1, whole)

	// The answer's text may come in several events (as the writer's
	// publishes went): those of the answer are joined.
	var types []string
	var answerText strings.Builder
	for i, e := range whole {
		if e.typ() == "text" && i > 0 && whole[i-1].typ() == "text" {
			answerText.WriteString(e.Data["text"].(string))
			continue
		}
		types = append(types, e.typ())
		if e.typ() == "text" {
			answerText.Reset()
			answerText.WriteString(e.Data["text"].(string))
		}
	}
	require.Equal(t, []string{"turn.started", "text", "attempt.retracted", "tool_call.started", "approval.requested", "approval.decided",
		"tool_call.finished", "text", "done"}, types, "%v", eventData(whole))
	cut, retracted, started, finished, answer := whole[1].Data, whole[2].Data, whole[3].Data, whole[6].Data, whole[7].Data
	require.Equal(t, "fine", whole[5].Data["approval"].(map[string]any)["decision"].(map[string]any)["reason"])
	require.Equal(t, "Let me ", cut["text"])
	for _, k := range []string{"turn", "step", "attempt", "answer"} {
		require.Equal(t, cut[k], retracted[k], "the withdrawal names the cut answer's %s", k)
	}
	require.Equal(t, 2.0, started["attempt"], "the tool call is the retried attempt's, shown once")
	require.Equal(t, "everything__echo", started["name"])
	require.JSONEq(t, `{"message":"hello there"}`, jsonOfValue(t, started["arguments"]))
	require.Equal(t, started["callId"], finished["callId"])
	require.Equal(t, 2.0, finished["step"], "the result opens the turn's next model call")
	require.Contains(t, finished["result"], "Echo: hello there")
	require.Nil(t, finished["error"])
	require.Contains(t, answerText.String(), "done: Echo: hello there")
	require.Equal(t, 2.0, answer["step"])
}

// jsonOfValue is v written as JSON.
func jsonOfValue(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// lastAnswerText is the text of the last answer of a seed stream: the
// events after the last rise of attempt.
func lastAnswerText(events []sseEvent) string {
	var b strings.Builder
	answer := 0.0
	for _, e := range events {
		if e.typ() != "text" {
			continue
		}
		if a, _ := e.Data["attempt"].(float64); a != answer {
			b.Reset()
			answer = a
		}
		b.WriteString(e.Data["text"].(string))
	}
	return b.String()
}

// Every task streams every event (docs/streaming.md#every-event): a task
// whose one response calls an MCP tool, an activity capability that needs
// a person's approval and a sub-task shows, on GET
// /v1/runs/{id}/events?events=all, the turn's start with its input, the
// three calls asked for, the sub-task's own events under its path, the
// approval asked for and decided over HTTP, the three results, the answer
// and done; the next turn's first call says the first turn's answer was
// committed. The sub-task's done does not end the run's stream.
func TestEveryKindOfToolCallStreamsItsEvents(t *testing.T) {
	h := newHarness(t)
	server := mcptest.New(t)
	startMCPWorker(h, server)
	payments := startRefundsWorker(t)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		last := c.Messages[len(c.Messages)-1]
		switch {
		case c.Model == "child":
			return testmodel.Reply{Text: "o-1 shipped on Monday"}
		case last.Role == "tool":
			return testmodel.Reply{Text: "all done"}
		case strings.Contains(last.Content, "and then?"):
			return testmodel.Reply{Text: "nothing more"}
		}
		return testmodel.Reply{ToolCalls: []testmodel.ToolCall{
			{ID: "c0", Name: "everything__echo", Arguments: `{"message":"hi"}`},
			{ID: "c1", Name: "refund", Arguments: `{"order_id":"o-1","amount":5}`},
			{ID: "c2", Name: "helper", Arguments: `{"message":"where is o-1?"}`},
		}}
	})
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())

	spec := refundAgent(payments, map[string]any{"approval": "always"})
	spec["capabilities"] = append(spec["capabilities"].([]any),
		map[string]any{"name": "everything", "kind": "mcp", "server": "everything", "tools": []string{"echo"}, "autoApprove": []string{"echo"}},
		map[string]any{"name": "helper", "kind": "delegate", "agent": map[string]any{"name": "helper", "model": "test/child"}})
	var agentSpec contract.AgentSpec
	raw, _ := json.Marshal(spec)
	require.NoError(t, json.Unmarshal(raw, &agentSpec))
	id := newRunID(t)
	_, err := starter.New(sdk, h.queue).Start(ctxT(t, 10*time.Second),
		contract.StartArgs{Agent: agentSpec, Mode: contract.ModeConversation, Input: &contract.TaskIO{Message: contract.TextParts("refund o-1 and tell me where it is")}},
		starter.StartOptions{TaskID: id, Memo: map[string]any{"api_task": "support-reply"}})
	require.NoError(t, err)

	s := openEvents(t, api.url, "/v1/runs/"+id+"/events?events=all", viewKey, nil)
	defer s.Close()
	first := s.until("approval.requested", 60*time.Second)
	approval := first[len(first)-1].Data["approval"].(map[string]any)
	require.Equal(t, "refund", approval["capability"])
	r := api.call("POST", "/v1/runs/"+id+"/approvals/"+approval["id"].(string), callKey, map[string]any{"approve": true, "reason": "small amount"})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	var events []sseEvent
	events = append(events, first...)
	for {
		e := s.next(60 * time.Second)
		events = append(events, e)
		if e.typ() == "done" && e.Data["path"] == nil {
			break
		}
	}
	r = api.call("POST", "/v1/runs/"+id+"/inputs", callKey, map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "and then?"}}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	for {
		e := s.next(60 * time.Second)
		events = append(events, e)
		if e.typ() == "done" && e.Data["path"] == nil {
			break
		}
	}
	requireIDsFrom(t, 1, events)

	// Text comes in as many events as the writer's publishes took: one
	// entry per run of them.
	var root, child []string
	add := func(list []string, typ string) []string {
		if typ == "text" && len(list) > 0 && list[len(list)-1] == "text" {
			return list
		}
		return append(list, typ)
	}
	for _, e := range events {
		if p, _ := e.Data["path"].(string); p != "" {
			require.Equal(t, "helper.t1.c2", p)
			child = add(child, e.typ())
		} else {
			root = add(root, e.typ())
		}
	}
	require.Equal(t, []string{"subtask.started", "turn.started", "text", "done"}, child, "%v", eventData(events))
	require.Equal(t, []string{"turn.started", "tool_call.started", "tool_call.started", "tool_call.started",
		"approval.requested", "approval.decided", "tool_call.finished", "tool_call.finished", "tool_call.finished",
		"text", "done", "turn.committed", "turn.started", "text", "done"}, root, "%v", eventData(events))

	byType := func(typ string, n int) map[string]any {
		for _, e := range events {
			if e.typ() == typ && e.Data["path"] == nil {
				if n == 0 {
					return e.Data
				}
				n--
			}
		}
		t.Fatalf("no %s %d", typ, n)
		return nil
	}
	inputs := byType("turn.started", 0)["inputs"].([]any)
	require.Equal(t, "refund o-1 and tell me where it is", inputs[0].(map[string]any)["text"])
	require.NotEmpty(t, inputs[0].(map[string]any)["committedAt"])
	decided := byType("approval.decided", 0)["approval"].(map[string]any)["decision"].(map[string]any)
	require.Equal(t, true, decided["approve"])
	require.Equal(t, "small amount", decided["reason"])
	require.Equal(t, tasksapi.KeyID(callKey), decided["by"])
	results := map[string]string{}
	for i := range 3 {
		f := byType("tool_call.finished", i)
		results[f["name"].(string)] = f["result"].(string)
	}
	require.Contains(t, results["everything__echo"], "Echo: hi")
	require.Contains(t, results["refund"], "o-1")
	require.Contains(t, results["helper"], "o-1 shipped on Monday")
	committed := byType("turn.committed", 0)
	require.Equal(t, 1.0, committed["committedTurn"])
	require.Equal(t, 2.0, committed["turn"], "published by the next turn's first call")

	// A Go service reads the same events with the agents iterator.
	src, err := agents.ConnectEvents(ctxT(t, 10*time.Second), natsURL, agents.WithTemporal(sdk))
	require.NoError(t, err)
	defer src.Close()
	var got []sseEvent
	for e, err := range src.Events(ctxT(t, 30*time.Second), id, 0) {
		require.NoError(t, err)
		got = append(got, sseEvent{ID: e.ID, Data: map[string]any{"type": e.Type}})
		if e.Type == agents.EventApprovalDecided {
			var a contract.Approval
			require.NoError(t, e.Decode(&a))
			require.Equal(t, "small amount", a.Decision.Reason)
		}
		if len(got) == len(events) {
			break
		}
	}
	require.Len(t, got, len(events))
	for i := range events {
		require.Equal(t, events[i].ID, got[i].ID)
		require.Equal(t, events[i].typ(), got[i].typ(), "event %d", i)
	}
}

// A run's own POST stream gives every event when asked ("events": "all",
// docs/streaming.md#every-event): the tool call, its approval (decided over
// HTTP meanwhile), its result, the answer, and it ends with the turn's
// done. A value it does not know is refused, naming the field.
func TestARunsPostStreamGivesEveryEventWhenAsked(t *testing.T) {
	h := newHarness(t)
	server := mcptest.New(t)
	startMCPWorker(h, server)
	h.model.SetHandler(mcpModel)
	api := newAPI(t, h)
	r := api.call("POST", "/v1/prompts/tool-agent/versions", devKey, map[string]any{"text": "You look things up."})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	require.Equal(t, http.StatusCreated, api.call("POST", "/v1/tasks", devKey, toolTask("everything")).Status)

	r = api.call("POST", "/v1/tasks/tool-reply/run", callKey, map[string]any{"input": "hi", "stream": true, "events": "everything"})
	requireProblem(t, r, http.StatusBadRequest, tasksapi.CodeValidationFailed, "events")

	s := openEvents(t, api.url, "/v1/tasks/tool-reply/run", callKey,
		map[string]any{"input": `call everything__echo {"message":"hello there"}`, "stream": true, "events": "all"})
	require.Equal(t, http.StatusOK, s.Resp.StatusCode)
	id := s.Resp.Header.Get("X-Request-Id")
	first := s.until("approval.requested", 60*time.Second)
	approval := first[len(first)-1].Data["approval"].(map[string]any)
	r = api.call("POST", "/v1/runs/"+id+"/approvals/"+approval["id"].(string), callKey, map[string]any{"approve": true})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	events := append(first, s.ended(60*time.Second)...)
	var types []string
	for _, e := range events {
		if e.typ() != "text" || types[len(types)-1] != "text" {
			types = append(types, e.typ())
		}
	}
	require.Equal(t, []string{"turn.started", "tool_call.started", "approval.requested", "approval.decided", "tool_call.finished", "text", "done"}, types, "%v", eventData(events))
}
