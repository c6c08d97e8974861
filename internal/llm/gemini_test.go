package llm_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/testmodel"
)

func TestGeminiToolRoundTripWithImages(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	srv.SetHandler(conversation)
	srv.SetPromptCache(true)
	r := nativeRouter(t, srv, llm.ProtocolGoogle)
	tools := []llm.Tool{{Name: "refund", Description: "Refunds an order", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"order": map[string]any{"type": "string"}}}}}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: strings.Repeat("You are a careful refunds agent. ", 20)},
		{Role: llm.RoleUser, Parts: []llm.Part{{Type: "text", Text: "Refund this order"}, {Type: "image_url", ImageURL: pngData},
			{Type: "file", FileName: "invoice.pdf", FileData: pdfData}}},
	}
	resp, err := r.Complete(t.Context(), llm.Request{Model: "google/test-echo", Messages: msgs, Tools: tools, MaxTokens: 500})
	require.NoError(t, err)
	require.Equal(t, "google", resp.Provider)
	require.Equal(t, []llm.ToolCall{{ID: "toolu_1", Name: "refund", Arguments: `{"order":"A-1"}`}}, resp.ToolCalls)
	first := srv.Calls()[0]
	require.Equal(t, testmodel.ProtocolGemini, first.Protocol)
	require.Equal(t, "test-key", first.Header.Get("X-Goog-Api-Key"))
	require.Equal(t, "test-echo", first.Model)
	require.Equal(t, 500, first.MaxTokens)
	require.Equal(t, []string{"refund"}, first.Tools)
	require.Equal(t, "system", first.Messages[0].Role)
	require.Equal(t, []string{pngData}, first.Messages[1].Images)
	require.Equal(t, []string{pdfData}, first.Messages[1].Files)
	require.Zero(t, resp.Usage.CacheReadTokens)

	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_1", Content: "12.50 EUR"})
	resp2, err := r.Complete(t.Context(), llm.Request{Model: "google/test-echo", Messages: msgs, Tools: tools})
	require.NoError(t, err)
	require.Equal(t, "the refund is 12.50 EUR", resp2.Text)
	second := srv.Calls()[1]
	require.Equal(t, "tool", second.Messages[3].Role)
	require.Equal(t, "toolu_1", second.Messages[3].ToolCallID)
	require.Positive(t, resp2.Usage.CacheReadTokens, "the implicit cache read the first request's prefix")
	require.LessOrEqual(t, resp2.Usage.CacheReadTokens, resp2.Usage.InputTokens)
}

func TestGeminiStreamsAndJSON(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	srv.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"Hel", "lo ", "there"}}
	})
	r := nativeRouter(t, srv, llm.ProtocolGoogle)
	var got []string
	resp, err := r.Complete(t.Context(), llm.Request{Model: "google/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
		ReasoningEffort: "low", OnText: func(d string) { got = append(got, d) }})
	require.NoError(t, err)
	require.Equal(t, []string{"Hel", "lo ", "there"}, got)
	require.Equal(t, "Hello there", resp.Text)
	require.Positive(t, resp.Usage.InputTokens)
	require.True(t, srv.Calls()[0].Stream)
	require.Contains(t, string(srv.Calls()[0].Raw), `"thinkingBudget":1024`)

	srv.SetHandler(nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}}
	resp, err = r.Complete(t.Context(), llm.Request{Model: "google/m", JSONSchema: schema, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	require.JSONEq(t, `{"message":"echo: hi"}`, resp.Text)
	require.Contains(t, string(srv.Calls()[1].Raw), `"responseMimeType":"application/json"`)
}

func TestGeminiErrors(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	r := nativeRouter(t, srv, llm.ProtocolGoogle)
	req := llm.Request{Model: "google/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	for _, tc := range []struct {
		status    int
		retryable bool
	}{
		{http.StatusTooManyRequests, true}, {http.StatusInternalServerError, true}, {http.StatusServiceUnavailable, true},
		{http.StatusForbidden, true}, {http.StatusBadRequest, false},
	} {
		srv.SetHandler(func(testmodel.Call) testmodel.Reply { return testmodel.Reply{Status: tc.status} })
		for _, stream := range []bool{false, true} {
			req.OnText = nil
			if stream {
				req.OnText = func(string) {}
			}
			_, err := r.Complete(t.Context(), req)
			e := requireLLMError(t, err, tc.retryable, tc.status)
			require.NotContains(t, e.Message, "test-key")
		}
	}
	require.Equal(t, 10, srv.CallCount(), "one attempt per call: genai's retries are off")

	// A 429 with RetryInfo says how long to wait.
	srv.SetHandler(func(testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Status: 429, RawBody: `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}}`}
	})
	req.OnText = nil
	_, err := r.Complete(t.Context(), req)
	e := requireLLMError(t, err, true, 429)
	require.Equal(t, 30*time.Second, e.RetryAfter)

	srv.SetHandler(nil)
	srv.SetContextLimit(1)
	_, err = r.Complete(t.Context(), llm.Request{Model: "google/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("long ", 20)}}})
	e = requireLLMError(t, err, true, http.StatusBadRequest)
	require.True(t, e.ContextLength, e.Message)

	r = llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"google": {BaseURL: closedURL(t), APIKey: "k", Protocol: llm.ProtocolGoogle}}})
	_, err = r.Complete(t.Context(), req)
	requireLLMError(t, err, true, 0)
}

func TestOpenAIReportsCachedTokens(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	srv.SetPromptCache(true)
	r := llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"openai": {BaseURL: srv.URL}}})
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: strings.Repeat("instructions ", 40)}, {Role: llm.RoleUser, Content: "one"}}
	resp, err := r.Complete(t.Context(), llm.Request{Model: "openai/m", Messages: msgs})
	require.NoError(t, err)
	require.Zero(t, resp.Usage.CacheReadTokens)
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Text}, llm.Message{Role: llm.RoleUser, Content: "two"})
	for _, stream := range []func(string){nil, func(string) {}} {
		resp, err = r.Complete(t.Context(), llm.Request{Model: "openai/m", Messages: msgs, OnText: stream})
		require.NoError(t, err)
		require.Positive(t, resp.Usage.CacheReadTokens)
		require.LessOrEqual(t, resp.Usage.CacheReadTokens, resp.Usage.InputTokens)
	}
}

// A server that says nothing for the request timeout is a retryable
// timeout on both native protocols, streamed or not.
func TestNativeTimeouts(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	srv.SetHandler(func(testmodel.Call) testmodel.Reply { return testmodel.Reply{Text: "late", Delay: 3 * time.Second} })
	for _, protocol := range []string{llm.ProtocolAnthropic, llm.ProtocolGoogle} {
		r := llm.NewRouter(llm.RouterOptions{
			Endpoints:      map[string]llm.Endpoint{protocol: {BaseURL: srv.Root, APIKey: "k", Protocol: protocol}},
			RequestTimeout: 200 * time.Millisecond,
		})
		for _, onText := range []func(string){nil, func(string) {}} {
			start := time.Now()
			_, err := r.Complete(t.Context(), llm.Request{Model: protocol + "/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, OnText: onText})
			e := requireLLMError(t, err, true, 0)
			require.Contains(t, e.Message, "timed out", protocol)
			require.Less(t, time.Since(start), 2*time.Second, "%s: the timeout, not the server, ended it", protocol)
		}
	}
}
