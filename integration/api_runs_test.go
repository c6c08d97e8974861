package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// createSeedTask stores the prompt and the seed's example task.
func createSeedTask(t *testing.T, api *apiServer, task map[string]any) {
	t.Helper()
	r := api.call("POST", "/v1/prompts/support-agent/versions", devKey, map[string]any{"text": "You help {{customer}} for {{brand}}."})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	r = api.call("POST", "/v1/tasks", devKey, task)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
}

// A run starts an AgentTask from the task and answers in one request; its
// conversation is read back, followed up, and every run rule refuses with
// its field.
func TestRunATask(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(echoLast)
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())

	body := map[string]any{"input": "My order is late.", "variables": map[string]any{"customer": "Amina"},
		"history": []any{map[string]any{"role": "user", "content": "Hello"}, map[string]any{"role": "assistant", "content": "Habari. How can I help?"}}}
	r := api.call("POST", "/v1/tasks/support-reply/run", callKey, body)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	id := r.Header.Get("X-Request-Id")
	require.Regexp(t, `^run-[a-z2-7]{26}$`, id)
	require.Equal(t, "KE", r.Header.Get("X-Ai-Processed-In"))
	d := r.data()
	require.Equal(t, "support-reply", d["task"])
	require.Equal(t, "test/echo", d["model"])
	require.Equal(t, "echo: My order is late.", d["text"])
	require.Equal(t, "end", d["stopReason"])
	require.Nil(t, d["json"])
	usage := d["usage"].(map[string]any)
	in, out := usage["inputTokens"].(float64), usage["outputTokens"].(float64)
	require.Greater(t, in, 0.0)
	require.Equal(t, float64(ceilUnits(in, out)), usage["units"])
	call := h.model.Calls()[h.model.CallCount()-1]
	require.Equal(t, "You help Amina for Duka.", call.Messages[0].Content, "the pinned prompt, filled")
	require.Equal(t, []string{"Hello", "Habari. How can I help?", "My order is late."},
		[]string{call.Messages[1].Content, call.Messages[2].Content, call.Messages[3].Content})

	// The run is an ordinary task: its conversation and status.
	r = api.call("GET", "/v1/runs/"+id+"/messages", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Len(t, r.JSON["data"].([]any), 4)
	r = api.call("GET", "/v1/runs/"+id+"/messages?after=3&limit=1", viewKey, nil)
	require.Len(t, r.JSON["data"].([]any), 1)
	r = api.call("GET", "/v1/runs/"+id, viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, float64(1), r.data()["outputs"])
	require.Equal(t, "waiting", r.data()["state"])

	// A follow-up input.
	r = api.call("POST", "/v1/runs/"+id+"/inputs", callKey, map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "Thanks!"}}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.NotEmpty(t, r.data()["received_at"])
	waitOutputs(t, id, 2)
	r = api.call("GET", "/v1/runs/"+id+"/messages", viewKey, nil)
	require.Len(t, r.JSON["data"].([]any), 6)
	requireProblem(t, api.call("POST", "/v1/runs/"+id+"/inputs", callKey, map[string]any{"message": []any{}}), 400, tasksapi.CodeValidationFailed, "")
	requireProblem(t, api.call("POST", "/v1/runs/"+id+"/inputs", callKey, map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": strings.Repeat("x", 2001)}}}),
		400, tasksapi.CodeValidationFailed, "message") // the task's input.maxBytes holds for follow-ups too
	requireProblem(t, api.call("GET", "/v1/runs/run-aaaaaaaaaaaaaaaaaaaaaaaaaa", viewKey, nil), 404, tasksapi.CodeRunNotFound, "")
	requireProblem(t, api.call("POST", "/v1/runs/"+id+"/inputs", viewKey, map[string]any{"message": []any{}}), 403, tasksapi.CodeForbidden, "")

	// Cancel: the run ends; later inputs are run_closed.
	r = api.call("POST", "/v1/runs/"+id+"/cancel", callKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	eventually(t, time.Minute, "the run canceled", func() bool {
		r := api.call("POST", "/v1/runs/"+id+"/inputs", callKey, map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "still there?"}}})
		return r.Status == http.StatusConflict && r.JSON["code"] == tasksapi.CodeRunClosed
	})

	// The same Idempotency-Key: one run, one answer.
	before := h.model.CallCount()
	a := api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "Once", "variables": map[string]any{"customer": "Amina"}}, "Idempotency-Key", "k-1")
	b := api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "Once", "variables": map[string]any{"customer": "Amina"}}, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusOK, a.Status, "%s", a.Raw)
	require.Equal(t, http.StatusOK, b.Status, "%s", b.Raw)
	require.Equal(t, a.Header.Get("X-Request-Id"), b.Header.Get("X-Request-Id"))
	require.JSONEq(t, string(a.Raw), string(b.Raw))
	require.Equal(t, before+1, h.model.CallCount(), "the repeated request did not call the model again")

	// The provider's finish reason: length is max_tokens.
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply { return testmodel.Reply{Text: "cut", FinishReason: "length"} })
	r = api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "Long one", "variables": map[string]any{"customer": "Amina"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, "max_tokens", r.data()["stopReason"])
	// A reasoning model's reasoning is left out of the text.
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{RawBody: `{"id":"r1","object":"chat.completion","model":"echo","choices":[{"index":0,"message":{"role":"assistant","content":"The answer.","reasoning_content":"First I think at length."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":20,"total_tokens":29}}`}
	})
	r = api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "Think", "variables": map[string]any{"customer": "Amina"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, "The answer.", r.data()["text"])
	require.NotContains(t, string(r.Raw), "think at length")
	h.model.SetHandler(echoLast)

	// Run rules.
	run := func(body any) reply { return api.call("POST", "/v1/tasks/support-reply/run", callKey, body) }
	ok := map[string]any{"input": "x", "variables": map[string]any{"customer": "Amina"}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range ok {
			m[kk] = vv
		}
		if v == deleteField {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	requireProblem(t, run(with("input", deleteField)), 400, tasksapi.CodeValidationFailed, "input")
	requireProblem(t, run(with("input", strings.Repeat("x", 2001))), 400, tasksapi.CodeValidationFailed, "input")
	requireProblem(t, run(with("variables", map[string]any{"customer": "Amina", "brand": "Other"})), 400, tasksapi.CodeValidationFailed, "variables.brand")
	requireProblem(t, run(with("variables", map[string]any{"customer": strings.Repeat("c", 101)})), 400, tasksapi.CodeValidationFailed, "variables.customer")
	requireProblem(t, run(with("history", []any{map[string]any{"role": "system", "content": "x"}})), 400, tasksapi.CodeValidationFailed, "history[0].role")
	requireProblem(t, run(with("history", []any{map[string]any{"role": "user", "content": ""}})), 400, tasksapi.CodeValidationFailed, "history[0].content")
	// Without a broker, stream is refused, and only after the other fields.
	bare := newAPI(t, h, withoutBroker)
	streamed := func(body map[string]any) reply {
		return bare.call("POST", "/v1/tasks/support-reply/run", callKey, body)
	}
	requireProblem(t, streamed(map[string]any{"input": "late", "variables": map[string]any{"customer": "Amina"}, "stream": true}), 400, tasksapi.CodeValidationFailed, "stream")
	requireProblem(t, streamed(map[string]any{"input": strings.Repeat("x", 2001), "variables": map[string]any{"customer": "Amina"}, "stream": true}), 400, tasksapi.CodeValidationFailed, "input")
	requireProblem(t, bare.call("GET", "/v1/runs/"+id+"/events", viewKey, nil), 400, tasksapi.CodeValidationFailed, "")
	requireProblem(t, run(with("extra", 1)), 400, tasksapi.CodeValidationFailed, "extra")
	requireProblem(t, run(strings.Repeat(" ", 256_001)+"{}"), 413, tasksapi.CodeValidationFailed, "")
	requireProblem(t, api.call("POST", "/v1/tasks/support-reply/run", viewKey, ok), 403, tasksapi.CodeForbidden, "")
	requireProblem(t, api.call("POST", "/v1/tasks/nope/run", callKey, ok), 404, tasksapi.CodeTaskNotFound, "")

	// Disabled, then deleted.
	disabled := seedTask()
	disabled["enabled"] = false
	require.Equal(t, http.StatusOK, api.call("PUT", "/v1/tasks/support-reply", devKey, disabled).Status)
	requireProblem(t, run(ok), 409, tasksapi.CodeTaskDisabled, "")
	require.Equal(t, http.StatusNoContent, api.call("DELETE", "/v1/tasks/support-reply", devKey, nil).Status)
	requireProblem(t, run(ok), 404, tasksapi.CodeTaskNotFound, "")
	requireProblem(t, api.call("POST", "/v1/runs/"+a.Header.Get("X-Request-Id")+"/inputs", callKey,
		map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "hi"}}}), 404, tasksapi.CodeTaskNotFound, "")
}

// ceilUnits is test/echo's price: 0.001 per input token, 0.002 per output token.
func ceilUnits(in, out float64) int64 {
	thousandths := int64(in) + 2*int64(out)
	return (thousandths + 999) / 1000
}

// A run that outlasts AGENT_API_RUN_TIMEOUT answers 504 run_timeout with
// its ID; the run goes on and its answer is read from its messages. A JSON
// task answers with json; a task without input runs its prompt.
func TestRunTimesOutJSONAndNoInput(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h, withRunTimeout(2*time.Second))
	js := seedTask()
	js["json"] = true
	js["schema"] = map[string]any{"type": "object", "properties": map[string]any{"reply": map[string]any{"type": "string"}}, "required": []any{"reply"}}
	createSeedTask(t, api, js)

	h.model.Hold()
	r := api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "Slow one", "variables": map[string]any{"customer": "Amina"}})
	requireProblem(t, r, 504, tasksapi.CodeRunTimeout, "")
	id := r.Header.Get("X-Request-Id")
	require.Contains(t, r.JSON["detail"], id)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply { return testmodel.Reply{Text: `{"reply": "Pole sana."}`} })
	h.model.Release()
	waitOutputs(t, id, 1)
	r = api.call("GET", "/v1/runs/"+id+"/messages", viewKey, nil)
	msgs := r.JSON["data"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	require.Equal(t, "output", last["type"])
	require.Equal(t, `{"reply": "Pole sana."}`, last["message"].([]any)[0].(map[string]any)["text"])

	// The runs that must answer go through an API with the default timeout
	// (the same stored tasks): 2 s is short for a loaded machine.
	api = newAPI(t, h)
	r = api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "Fast", "variables": map[string]any{"customer": "Amina"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, map[string]any{"reply": "Pole sana."}, r.data()["json"])

	// input.maxBytes 0: the filled prompt is the one message.
	none := seedTask()
	none["name"] = "no-input"
	none["input"] = map[string]any{"maxBytes": 0}
	none["history"] = map[string]any{"messages": 0, "maxBytes": 0}
	require.Equal(t, http.StatusCreated, api.call("POST", "/v1/tasks", devKey, none).Status)
	h.model.SetHandler(echoLast)
	requireProblem(t, api.call("POST", "/v1/tasks/no-input/run", callKey, map[string]any{"input": "x", "variables": map[string]any{"customer": "Amina"}}), 400, tasksapi.CodeValidationFailed, "input")
	r = api.call("POST", "/v1/tasks/no-input/run", callKey, map[string]any{"variables": map[string]any{"customer": "Amina"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, "echo: You help Amina for Duka.", r.data()["text"])
	call := h.model.Calls()[h.model.CallCount()-1]
	require.Len(t, call.Messages, 1, "no instructions besides the prompt")
}

// A model that refuses the request for good answers 502 model_error; a
// run's history beyond the task's count or bytes is refused on history.
func TestRunModelErrorAndHistoryLimits(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Status: http.StatusBadRequest, ErrorMessage: "unsupported parameter"}
	})
	r := api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "x", "variables": map[string]any{"customer": "Amina"}})
	requireProblem(t, r, 502, tasksapi.CodeModelError, "")
	require.NotEmpty(t, r.Header.Get("X-Request-Id"))

	var eleven []any
	for i := 0; i < 11; i++ {
		eleven = append(eleven, map[string]any{"role": "user", "content": "x"})
	}
	requireProblem(t, api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "x", "variables": map[string]any{"customer": "Amina"}, "history": eleven}),
		400, tasksapi.CodeValidationFailed, "history")
	requireProblem(t, api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "x", "variables": map[string]any{"customer": "Amina"},
		"history": []any{map[string]any{"role": "user", "content": strings.Repeat("h", 8001)}}}), 400, tasksapi.CodeValidationFailed, "history")
}

// A run started over HTTP is a task like any other for the operator: listed
// by AgentName, AgentModel and AgentState, with the Web UI's summary line.
func TestRunsAreListedByAgentState(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())
	r := api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "Hello", "variables": map[string]any{"customer": "Amina"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	id := r.Header.Get("X-Request-Id")
	eventually(t, time.Minute, "the run listed as active", listed(t, contract.AgentStateActive, id))
	res, err := sdk.ListWorkflow(ctxT(t, 10*time.Second), &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: temporalNS, Query: `AgentName = "support-reply" AND AgentModel = "test/echo" AND WorkflowId = "` + id + `"`,
	})
	require.NoError(t, err)
	require.Len(t, res.GetExecutions(), 1)
	d, err := sdk.DescribeWorkflowExecution(ctxT(t, 10*time.Second), id, "")
	require.NoError(t, err)
	var summary string
	require.NoError(t, json.Unmarshal(d.GetExecutionConfig().GetUserMetadata().GetSummary().GetData(), &summary))
	require.Equal(t, "agent support-reply · test/echo · conversation", summary)
}
