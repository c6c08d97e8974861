package integration

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/tasksapi"
)

// seedTask is the seed's example task, on the test model and a prompt of
// the test's own.
func seedTask() map[string]any {
	return map[string]any{
		"name":            "support-reply",
		"description":     "Answers customers",
		"prompt":          map[string]any{"name": "support-agent", "version": 1},
		"model":           "test/echo",
		"maxTokens":       400,
		"temperature":     nil,
		"topP":            nil,
		"reasoningEffort": "",
		"json":            false,
		"schema":          nil,
		"input":           map[string]any{"maxBytes": 2000},
		"variables":       map[string]any{"brand": map[string]any{"value": "Duka"}, "customer": map[string]any{"maxBytes": 100}},
		"history":         map[string]any{"messages": 10, "maxBytes": 8000},
	}
}

func withField(m map[string]any, path string, v any) map[string]any {
	out := map[string]any{}
	for k, x := range m {
		out[k] = x
	}
	keys := strings.Split(path, ".")
	cur := out
	for i, k := range keys {
		if i == len(keys)-1 {
			if v == deleteField {
				delete(cur, k)
			} else {
				cur[k] = v
			}
			break
		}
		next := map[string]any{}
		if old, ok := cur[k].(map[string]any); ok {
			for kk, vv := range old {
				next[kk] = vv
			}
		}
		cur[k] = next
		cur = next
	}
	return out
}

type deleteMarker struct{}

var deleteField = deleteMarker{}

// Tasks are created, read (with the prompt's newest version, the worst
// case and who changed them), listed, changed and deleted; every rule of the
// seed refuses with the field it concerns and stores nothing.
func TestTasksAPI(t *testing.T) {
	h := newHarness(t)
	api := newAPI(t, h)
	prompt := "You help {{customer}} for {{brand}}."
	require.Equal(t, http.StatusCreated, api.call("POST", "/v1/prompts/support-agent/versions", devKey, map[string]any{"text": prompt}).Status)

	r := api.call("POST", "/v1/tasks", devKey, seedTask())
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	d := r.data()
	require.Equal(t, "support-reply", d["name"])
	require.Equal(t, map[string]any{"name": "support-agent", "version": float64(1), "latestVersion": float64(1)}, d["prompt"])
	require.Equal(t, true, d["enabled"])
	require.Nil(t, d["temperature"])
	require.Nil(t, d["schema"])
	require.Equal(t, tasksapi.KeyID(devKey), d["createdBy"])
	require.Len(t, d["createdBy"], 26)
	require.Equal(t, d["createdAt"], d["updatedAt"])
	// Worst case: the prompt with "Duka" in place and {{customer}} removed,
	// plus input 2000, customer 100 and history 8000; test/echo costs 0.001
	// and 0.002 units per token.
	// Three calls at most: an answer over the 100,000-byte inline budget
	// is asked again, the next call adding a 512-byte refusal each time.
	in := len("You help  for Duka.") + 2000 + 100 + 8000
	require.Equal(t, map[string]any{"inputTokens": float64(3*in + 3*512), "outputTokens": float64(1200), "units": float64(11 + 12 + 12)}, d["worstCase"],
		"ceil(%d×0.001 + 400×0.002), then with 512 and 1,024 more input tokens", in)

	// A second version of the prompt shows as latestVersion; the task keeps its pin.
	require.Equal(t, http.StatusCreated, api.call("POST", "/v1/prompts/support-agent/versions", devKey, map[string]any{"text": prompt + " v2"}).Status)
	r = api.call("GET", "/v1/tasks/support-reply", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, map[string]any{"name": "support-agent", "version": float64(1), "latestVersion": float64(2)}, r.data()["prompt"])

	// Same name again: task_exists.
	requireProblem(t, api.call("POST", "/v1/tasks", devKey, seedTask()), 409, tasksapi.CodeTaskExists, "")

	// Refusals, each naming its field; nothing is stored.
	refusals := []struct {
		path  string
		value any
		field string
	}{
		{"name", "Bad_Name", "name"},
		{"name", strings.Repeat("a", 64), "name"},
		{"description", strings.Repeat("d", 501), "description"},
		{"prompt", deleteField, "prompt"},
		{"prompt.name", "nope", "prompt.name"},
		{"prompt.version", 9, "prompt.version"},
		{"model", "acme/unknown", "model"},
		{"maxTokens", 0, "maxTokens"},
		{"maxTokens", 4097, "maxTokens"},
		{"maxTokens", "many", "maxTokens"},
		{"temperature", 2.5, "temperature"},
		{"topP", 1.5, "topP"},
		{"reasoningEffort", "low", "reasoningEffort"}, // test/echo does not reason
		{"reasoningEffort", "extreme", "reasoningEffort"},
		{"schema", map[string]any{"type": "object"}, "schema"}, // needs json
		{"input.maxBytes", 32769, "input.maxBytes"},
		{"input", deleteField, "input.maxBytes"},
		{"variables.brand", deleteField, "variables.brand"},
		{"variables.extra", map[string]any{"value": "x"}, "variables.extra"},
		{"variables.customer.maxBytes", 0, "variables.customer.maxBytes"},
		{"history.messages", 51, "history.messages"},
		{"history.maxBytes", 65537, "history.maxBytes"},
		{"unknown", 1, "unknown"},
		{"input.maxBytes", 0, "history.messages"}, // history needs input
		{"history", map[string]any{"messages": 0, "maxBytes": 10}, "history.maxBytes"},
		{"history.extra", 1, "history.extra"},
	}
	for _, c := range refusals {
		body := withField(seedTask(), c.path, c.value)
		body["name"] = "refused"
		if c.path == "name" {
			body["name"] = c.value
		}
		r := api.call("POST", "/v1/tasks", devKey, body)
		require.Equal(t, 400, r.Status, "%s=%v: %s", c.path, c.value, r.Raw)
		requireProblem(t, r, 400, tasksapi.CodeValidationFailed, c.field)
	}
	requireProblem(t, api.call("POST", "/v1/tasks", devKey, `{"name": "x"`), 400, tasksapi.CodeValidationFailed, "")
	requireProblem(t, api.call("POST", "/v1/tasks", devKey, `{}`, "Content-Type", "text/plain"), 415, tasksapi.CodeValidationFailed, "")
	requireProblem(t, api.call("POST", "/v1/tasks", devKey, strings.Repeat(" ", 300_000)+"{}"), 413, tasksapi.CodeValidationFailed, "")
	requireProblem(t, api.call("POST", "/v1/tasks", callKey, seedTask()), 403, tasksapi.CodeForbidden, "")
	requireProblem(t, api.call("POST", "/v1/tasks", "", seedTask()), 401, tasksapi.CodeUnauthorized, "")
	requireProblem(t, api.call("GET", "/v1/tasks/refused", viewKey, nil), 404, tasksapi.CodeTaskNotFound, "")

	// A prompt that, filled to its variables' limits, is more than a run can send.
	long := "{{customer}} " + strings.Repeat("p", 99_000)
	require.Equal(t, http.StatusCreated, api.call("POST", "/v1/prompts/long/versions", devKey, map[string]any{"text": long}).Status)
	tooLong := withField(seedTask(), "prompt", map[string]any{"name": "long", "version": 1})
	tooLong["name"], tooLong["variables"] = "too-long", map[string]any{"customer": map[string]any{"maxBytes": 32_768}}
	requireProblem(t, api.call("POST", "/v1/tasks", devKey, tooLong), 400, tasksapi.CodeValidationFailed, "prompt")

	// A model that reasons takes reasoningEffort.
	reasoning := withField(seedTask(), "model", "openai/o3-mini")
	reasoning["name"], reasoning["reasoningEffort"] = "reasoner", "low"
	r = api.call("POST", "/v1/tasks", devKey, reasoning)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	require.Equal(t, "low", r.data()["reasoningEffort"])
	require.Equal(t, http.StatusNoContent, api.call("DELETE", "/v1/tasks/reasoner", devKey, nil).Status)

	// A JSON task with a schema.
	js := withField(seedTask(), "json", true)
	js["name"] = "json-reply"
	js["schema"] = map[string]any{"type": "object", "properties": map[string]any{"reply": map[string]any{"type": "string"}}, "required": []any{"reply"}}
	r = api.call("POST", "/v1/tasks", devKey, js)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	outside := withField(js, "schema", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", "format": "email"}}})
	outside["name"] = "outside-subset"
	r = api.call("POST", "/v1/tasks", devKey, outside)
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	require.Contains(t, r.JSON["field"], "schema.", "the keyword outside seed 003's subset: %s", r.Raw)
	big := withField(js, "schema", map[string]any{"type": "object", "description": strings.Repeat("s", 16_000)})
	big["name"] = "big-schema"
	requireProblem(t, api.call("POST", "/v1/tasks", devKey, big), 400, tasksapi.CodeValidationFailed, "schema")

	// List, by name.
	r = api.call("GET", "/v1/tasks", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	var names []string
	for _, x := range r.JSON["data"].([]any) {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	require.Equal(t, []string{"json-reply", "support-reply"}, names)

	// Change: every field again; the body's name must be the path's.
	changed := withField(seedTask(), "maxTokens", 200)
	changed["enabled"] = false
	requireProblem(t, api.call("PUT", "/v1/tasks/json-reply", devKey, changed), 400, tasksapi.CodeValidationFailed, "name")
	requireProblem(t, api.call("PUT", "/v1/tasks/missing", devKey, withField(changed, "name", "missing")), 404, tasksapi.CodeTaskNotFound, "")
	r = api.call("PUT", "/v1/tasks/support-reply", devKey, changed)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, float64(200), r.data()["maxTokens"])
	require.Equal(t, false, r.data()["enabled"])
	require.Equal(t, float64(3*200), r.data()["worstCase"].(map[string]any)["outputTokens"], "three calls of 200")

	// Delete: 204, then it is gone and its name is free.
	requireProblem(t, api.call("DELETE", "/v1/tasks/support-reply", viewKey, nil), 403, tasksapi.CodeForbidden, "")
	r = api.call("DELETE", "/v1/tasks/support-reply", devKey, nil)
	require.Equal(t, http.StatusNoContent, r.Status, "%s", r.Raw)
	require.Empty(t, r.Raw)
	requireProblem(t, api.call("GET", "/v1/tasks/support-reply", viewKey, nil), 404, tasksapi.CodeTaskNotFound, "")
	requireProblem(t, api.call("DELETE", "/v1/tasks/support-reply", devKey, nil), 404, tasksapi.CodeTaskNotFound, "")
	r = api.call("POST", "/v1/tasks", devKey, seedTask())
	require.Equal(t, http.StatusCreated, r.Status, "the name is free again: %s", r.Raw)

	// The store's entities, for the replay tests of package definitions.
	prefix := "it/" + h.queue + "/"
	recordHistory(t, prefix+"index", "", "store-index")
	recordHistory(t, prefix+"task/json-reply", "", "store-task")
	recordHistory(t, prefix+"prompt/support-agent", "", "store-prompt")
	recordHistory(t, prefix+"prompt/support-agent/v1", "", "store-prompt-version")

	// Models.
	r = api.call("GET", "/v1/models", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status)
	var echo map[string]any
	for _, m := range r.JSON["data"].([]any) {
		if m.(map[string]any)["name"] == "test/echo" {
			echo = m.(map[string]any)
		}
	}
	require.Equal(t, map[string]any{"name": "test/echo", "maxTokens": float64(4096), "reasoning": false, "inputUnitsPerToken": 0.001, "outputUnitsPerToken": 0.002}, echo)
}

// Two developers creating one name at once: one 201, one task_exists. A
// project holds 100 tasks: the 101st is refused with task_limit.
func TestTaskNamesAreUniqueAndLimited(t *testing.T) {
	h := newHarness(t)
	api := newAPI(t, h)
	require.Equal(t, http.StatusCreated, api.call("POST", "/v1/prompts/support-agent/versions", devKey, map[string]any{"text": "You help {{customer}} for {{brand}}."}).Status)

	statuses := make(chan reply, 2)
	for range 2 {
		go func() { statuses <- api.call("POST", "/v1/tasks", devKey, seedTask()) }()
	}
	a, b := <-statuses, <-statuses
	if a.Status != http.StatusCreated {
		a, b = b, a
	}
	require.Equal(t, http.StatusCreated, a.Status, "%s", a.Raw)
	requireProblem(t, b, 409, tasksapi.CodeTaskExists, "")

	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	replies := make([]reply, 100)
	// Each with a schema of nearly 16 KB: 100 of them still fit.
	bigSchema := map[string]any{"type": "object", "description": strings.Repeat("s", 15_900),
		"properties": map[string]any{"reply": map[string]any{"type": "string"}}}
	for i := 1; i < 100; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			body := seedTask()
			body["name"] = fmt.Sprintf("task-%03d", i)
			body["json"], body["schema"] = true, bigSchema
			replies[i] = api.call("POST", "/v1/tasks", devKey, body)
		}()
	}
	wg.Wait()
	for _, r := range replies[1:] {
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	}
	body := seedTask()
	body["name"] = "one-too-many"
	requireProblem(t, api.call("POST", "/v1/tasks", devKey, body), 409, tasksapi.CodeTaskLimit, "")
	r := api.call("GET", "/v1/tasks", viewKey, nil)
	require.Len(t, r.JSON["data"].([]any), 100)
	require.Equal(t, http.StatusNoContent, api.call("DELETE", "/v1/tasks/task-001", devKey, nil).Status)
	require.Equal(t, http.StatusCreated, api.call("POST", "/v1/tasks", devKey, body).Status, "room again after a delete")
}
