package integration

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// Native providers (docs/providers.md): the worker reaches provider
// "anthropic" over Anthropic's Messages API (and "google" over the Gemini
// API), the test model speaking it from the same script as the OpenAI tests.

// startNativeWorker runs a worker of h that also serves providers
// "anthropic" and "google" on the test model.
func startNativeWorker(h *harness) {
	h.t.Helper()
	cfg := h.workerConfig()
	cfg.Models.Endpoints["anthropic"] = llm.Endpoint{BaseURL: h.model.Root, APIKey: "sk-ant-test", Protocol: llm.ProtocolAnthropic}
	cfg.Models.Endpoints["google"] = llm.Endpoint{BaseURL: h.model.Root, APIKey: "g-test", Protocol: llm.ProtocolGoogle}
	h.runWorker(cfg)
}

// nativeModel asks for the refunds a "refund ORDER AMOUNT" message names,
// answers "done: " and the results once they are back, and echoes anything
// else; an agent with a mount answers its output schema's JSON.
func nativeModel(c testmodel.Call) testmodel.Reply {
	last := c.Messages[len(c.Messages)-1]
	var r testmodel.Reply
	switch {
	case last.Role == "tool":
		r = testmodel.Reply{Text: "done: " + last.Content}
	case strings.HasPrefix(last.Content, "refund "):
		line, _, _ := strings.Cut(last.Content, "\n") // the runtime notes the attachments below
		r = refundModel(testmodel.Call{Messages: []testmodel.Message{{Role: "user", Content: line}}})
	default:
		r = testmodel.Reply{Text: "echo: " + last.Content}
	}
	if c.JSONSchema != nil && r.Text != "" {
		b, _ := json.Marshal(map[string]any{"message": r.Text, "attachments": []any{}})
		r.Text = string(b)
	}
	return r
}

// A conversation on anthropic/…: an image from the task's mount, an
// activity capability called as a tool, cache breakpoints on every request,
// and cache reads in the usage from the second model call on.
func TestAnthropicConversationWithToolsImageAndCache(t *testing.T) {
	for _, tc := range []struct{ model, protocol string }{
		{"anthropic/test-echo", testmodel.ProtocolAnthropic},
		{"google/test-echo", testmodel.ProtocolGemini},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			h := newHarness(t)
			startNativeWorker(h)
			h.model.SetPromptCache(true) // Gemini's implicit cache; Anthropic's follows the breakpoints
			queue := startRefundsWorker(t)
			h.model.SetHandler(nativeModel)
			spec := refundAgent(queue, nil)
			spec["model"] = tc.model
			spec["instructions"] = strings.Repeat("You issue refunds for Duka's customers, politely and exactly. ", 8)
			m := h.mountSpec("files")
			spec["mount"] = m
			id := "native-" + tc.protocol
			startTask(t, h, id, map[string]any{"agent": spec})

			part := upload(t, m, id, "receipt.png", "image/png", pngBytes)
			_, err := sendUpdate(t, id, map[string]any{"message": []any{
				map[string]any{"mimeType": "text/plain", "text": "refund o-1 25"}, partMap(part)}})
			require.NoError(t, err)
			st := waitOutputs(t, id, 1)
			got := lastText(t, id)
			require.Contains(t, got, "done: {")
			require.Contains(t, got, `"status":"issued"`)
			turn1 := st.Usage

			_, err = sendUpdate(t, id, text("thanks, and the receipt?"))
			require.NoError(t, err)
			st = waitOutputs(t, id, 2)
			// The saved refund is recalled right before the new input (the
			// conversation before it repeats the previous request: the
			// cache's prefix), and the input is what the model reads last.
			got = lastText(t, id)
			require.True(t, strings.HasPrefix(got, `echo: <untrusted_data label="already_collected">`), "%s", got)
			require.True(t, strings.HasSuffix(got, "thanks, and the receipt?"), "%s", got)

			calls := h.model.Calls()
			require.Len(t, calls, 3, "the tool call, its answer, the second turn")
			img := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
			for i, c := range calls {
				require.Equal(t, tc.protocol, c.Protocol, "call %d", i+1)
				require.Equal(t, "test-echo", c.Model)
				require.Equal(t, "system", c.Messages[0].Role)
				require.Equal(t, []string{img}, c.Messages[1].Images, "call %d shows the mount's image", i+1)
				require.Equal(t, []string{"refund"}, c.Tools)
			}
			require.Equal(t, "tool", calls[1].Messages[3].Role, "the activity's result went back as a tool result")
			require.Contains(t, calls[1].Messages[3].Content, `"status":"issued"`)
			if tc.protocol == testmodel.ProtocolAnthropic {
				require.Equal(t, 1, calls[0].CacheBreakpoints, "the instructions")
				require.Equal(t, 2, calls[1].CacheBreakpoints, "the instructions and the older conversation")
				require.Equal(t, 2, calls[2].CacheBreakpoints)
				// (The tool round recalls the saved refund before the turn's input,
				// so its prefix is not the second turn's: what counts is that the
				// second turn's prefix is marked and read from the cache, below.)
				require.Positive(t, calls[2].CachePrefixBytes)
				require.Zero(t, calls[0].CacheReadTokens)
				require.Positive(t, calls[0].CacheWriteTokens)
			}
			require.Positive(t, calls[2].CacheReadTokens, "the second turn reads the first's prefix from the cache")

			// The task's usage sums what the provider reported, cached tokens included.
			turn2 := st.Usage
			require.Equal(t, calls[1].CacheReadTokens+calls[2].CacheReadTokens, turn2.CacheReadTokens)
			require.Greater(t, turn2.CacheReadTokens-turn1.CacheReadTokens, 0, "the second turn's usage shows cache reads")
			require.GreaterOrEqual(t, turn2.InputTokens, turn2.CacheReadTokens+turn2.CacheWriteTokens)
			model, ok := catalog.Builtin().Get(tc.model)
			require.True(t, ok)
			cached := model.UnitsOf(catalog.Tokens{Input: int64(turn2.InputTokens), Output: int64(turn2.OutputTokens),
				CacheRead: int64(turn2.CacheReadTokens), CacheWrite: int64(turn2.CacheWriteTokens)})
			// Cache reads cost the cached price: the same tokens as plain input
			// cost more. (The whole turn's units may come out equal either way:
			// writes cost a premium that can offset the reads' discount.)
			read := int64(turn2.CacheReadTokens)
			require.Less(t, model.UnitsOf(catalog.Tokens{Input: read, CacheRead: read}), model.Units(read, 0), "cached tokens have their own price (usage %+v)", turn2)
			require.Positive(t, cached)
		})
	}
}

// A streamed run of a task on anthropic/… through the Tasks API: the text
// arrives as the model writes it, and the follow-up's done event shows the
// cache reads and units priced with them.
func TestAnthropicStreamedRunShowsCachedUsage(t *testing.T) {
	h := newHarness(t)
	startNativeWorker(h)
	api := newAPI(t, h)
	createSeedTask(t, api, withField(seedTask(), "model", "anthropic/test-echo"))
	r := api.call("GET", "/v1/models", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status)
	var entry map[string]any
	for _, m := range r.JSON["data"].([]any) {
		if m.(map[string]any)["name"] == "anthropic/test-echo" {
			entry = m.(map[string]any)
		}
	}
	require.Equal(t, map[string]any{"name": "anthropic/test-echo", "maxTokens": float64(4096), "reasoning": false, "inputUnitsPerToken": 0.01,
		"outputUnitsPerToken": 0.02, "cachedInputUnitsPerToken": 0.001, "cacheWriteUnitsPerToken": 0.0125}, entry, "GET /v1/models shows the cache prices")
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"Pole sana, ", "Amina."}}
	})
	s := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	require.Equal(t, http.StatusOK, s.Resp.StatusCode)
	id := s.Resp.Header.Get("X-Request-Id")
	events := s.until("done", 30*time.Second)
	require.Equal(t, "Pole sana, Amina.", textOf(events))
	call := h.model.Calls()[0]
	require.Equal(t, testmodel.ProtocolAnthropic, call.Protocol)
	require.True(t, call.Stream, "the model was asked to stream")
	require.Equal(t, 400, call.MaxTokens)
	first := events[len(events)-1].Data["usage"].(map[string]any)
	require.Nil(t, first["cacheReadTokens"], "nothing cached yet")
	require.Positive(t, first["cacheWriteTokens"])

	all := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil)
	all.until("done", 10*time.Second)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply { return testmodel.Reply{Chunks: []string{"It left ", "today."}} })
	r = api.call("POST", "/v1/runs/"+id+"/inputs", callKey, map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "When?"}}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	second := all.until("done", 30*time.Second)
	require.Equal(t, "It left today.", textOf(second))
	require.Equal(t, 2, h.model.Calls()[1].CacheBreakpoints)
	usage := second[len(second)-1].Data["usage"].(map[string]any)
	read := usage["cacheReadTokens"].(float64)
	require.Equal(t, float64(h.model.Calls()[1].CacheReadTokens), read)
	require.Positive(t, read)
	model, _ := catalog.Builtin().Get("anthropic/test-echo")
	write, _ := usage["cacheWriteTokens"].(float64)
	want := model.UnitsOf(catalog.Tokens{Input: int64(usage["inputTokens"].(float64)), Output: int64(usage["outputTokens"].(float64)),
		CacheRead: int64(read), CacheWrite: int64(write)})
	require.Equal(t, float64(want), usage["units"], "units price the cached tokens")
}
