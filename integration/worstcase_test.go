package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/testmodel"
)

// A JSON task's worstCase covers a run that used every call it may: the
// model answers unfit JSON twice, then fit JSON, reporting as prompt
// tokens every byte it was sent (messages and schema) and the task's whole
// maxTokens as output each time. The run reports the model that answered,
// not the catalogue's name.
func TestWorstCaseCoversAJSONRunOfThreeCalls(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h)
	task := seedTask()
	task["name"] = "json-reply"
	task["json"] = true
	task["schema"] = map[string]any{"type": "object", "properties": map[string]any{"reply": map[string]any{"type": "string"}}, "required": []any{"reply"}}
	task["input"] = map[string]any{"maxBytes": 200}
	task["history"] = map[string]any{"messages": 0, "maxBytes": 0}
	createSeedTask(t, api, task)
	r := api.call("GET", "/v1/tasks/json-reply", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	worst := r.data()["worstCase"].(map[string]any)
	oneCall := float64(len("You help  for Duka.") + 100 + 200) // what worstCase counted before: one call

	var mu sync.Mutex
	answers := []string{"Sure! Your order is on its way.", `{"answer": "on its way"}`, `{"reply": "Pole sana, it leaves today."}`}
	var prompts []int
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		mu.Lock()
		defer mu.Unlock()
		sent := 0
		for _, m := range c.Messages {
			sent += len(m.Content)
		}
		if c.JSONSchema != nil {
			b, _ := json.Marshal(c.JSONSchema)
			sent += len(b)
		}
		prompts = append(prompts, sent)
		text := answers[min(len(prompts), len(answers))-1]
		content, _ := json.Marshal(text)
		return testmodel.Reply{RawBody: fmt.Sprintf(`{"id":"r%d","object":"chat.completion","model":"echo-2026-06-01","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":400,"total_tokens":%d}}`,
			len(prompts), content, sent, sent+400)}
	})
	before := h.model.CallCount()
	r = api.call("POST", "/v1/tasks/json-reply/run", callKey, map[string]any{"input": strings.Repeat("i", 200), "variables": map[string]any{"customer": strings.Repeat("c", 100)}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, before+3, h.model.CallCount(), "two refused answers, then the fit one")
	d := r.data()
	require.Equal(t, map[string]any{"reply": "Pole sana, it leaves today."}, d["json"])
	require.Equal(t, "test/echo-2026-06-01", d["model"], "the model that answered")

	usage := d["usage"].(map[string]any)
	mu.Lock()
	require.Len(t, prompts, 3)
	require.Greater(t, prompts[2], prompts[0], "each retry sends more: %v", prompts)
	total := float64(prompts[0] + prompts[1] + prompts[2])
	mu.Unlock()
	require.Equal(t, total, usage["inputTokens"])
	require.Equal(t, float64(1200), usage["outputTokens"])
	require.Greater(t, usage["inputTokens"].(float64), oneCall, "the run sent more than one call's worst case")
	for _, k := range []string{"inputTokens", "outputTokens", "units"} {
		require.LessOrEqual(t, usage[k].(float64), worst[k].(float64), "%s: the run used %v, worstCase says %v", k, usage[k], worst[k])
	}
	t.Logf("worstCase %v covers the run's usage %v (prompts %v)", worst, usage, prompts)
}
