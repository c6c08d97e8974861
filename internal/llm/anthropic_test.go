package llm_test

import (
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// pngData is a 1x1 PNG as a data: URL.
const pngData = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

var pdfData = "data:application/pdf;base64," + base64.StdEncoding.EncodeToString([]byte("%PDF-1.4 tiny"))

func nativeRouter(t *testing.T, srv *testmodel.Server, protocol string) *llm.Router {
	t.Helper()
	return llm.NewRouter(llm.RouterOptions{
		Endpoints:      map[string]llm.Endpoint{protocol: {BaseURL: srv.Root, APIKey: "test-key", Protocol: protocol}},
		RequestTimeout: 10 * time.Second,
	})
}

// conversation scripts a tool round trip: the first call asks for a tool,
// the second answers with its result.
func conversation(c testmodel.Call) testmodel.Reply {
	last := c.Messages[len(c.Messages)-1]
	if last.Role == "tool" {
		return testmodel.Reply{Text: "the refund is " + last.Content}
	}
	if len(c.Tools) > 0 {
		return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "toolu_1", Name: "refund", Arguments: `{"order":"A-1"}`}}}
	}
	return testmodel.Echo(c)
}

func TestAnthropicToolRoundTripWithImagesAndCache(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	srv.SetHandler(conversation)
	r := nativeRouter(t, srv, llm.ProtocolAnthropic)
	temp := 0.2
	tools := []llm.Tool{{Name: "refund", Description: "Refunds an order", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"order": map[string]any{"type": "string"}}, "required": []any{"order"}}}}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: strings.Repeat("You are a careful refunds agent. ", 20)},
		{Role: llm.RoleUser, Parts: []llm.Part{{Type: "text", Text: "Refund this order"}, {Type: "image_url", ImageURL: pngData},
			{Type: "file", FileName: "invoice.pdf", FileData: pdfData}}},
	}
	resp, err := r.Complete(t.Context(), llm.Request{Model: "anthropic/test-echo", Messages: msgs, Tools: tools, Temperature: &temp})
	require.NoError(t, err)
	require.Equal(t, "anthropic", resp.Provider)
	require.Equal(t, []llm.ToolCall{{ID: "toolu_1", Name: "refund", Arguments: `{"order":"A-1"}`}}, resp.ToolCalls)

	first := srv.Calls()[0]
	require.Equal(t, testmodel.ProtocolAnthropic, first.Protocol)
	require.Equal(t, "Bearer test-key", first.Header.Get("Authorization"), "the SDK sends the key as a bearer token")
	require.Equal(t, "test-echo", first.Model)
	require.Equal(t, llm.DefaultAnthropicMaxTokens, first.MaxTokens, "max_tokens is required: the default fills it")
	require.Equal(t, &temp, first.Temperature)
	require.Equal(t, []string{"refund"}, first.Tools)
	require.Equal(t, "system", first.Messages[0].Role)
	require.Equal(t, []string{pngData}, first.Messages[1].Images)
	require.Equal(t, []string{pdfData}, first.Messages[1].Files)
	require.Equal(t, 1, first.CacheBreakpoints, "the system prompt; no older conversation yet")
	require.Zero(t, first.CacheReadTokens)
	require.Positive(t, resp.Usage.CacheWriteTokens)
	require.Equal(t, first.CacheWriteTokens, resp.Usage.CacheWriteTokens)

	// The tool's result goes back; the prefix up to the system prompt is read from the cache.
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_1", Content: "12.50 EUR"})
	resp2, err := r.Complete(t.Context(), llm.Request{Model: "anthropic/test-echo", Messages: msgs, Tools: tools, MaxTokens: 300})
	require.NoError(t, err)
	require.Equal(t, "the refund is 12.50 EUR", resp2.Text)
	second := srv.Calls()[1]
	require.Equal(t, 300, second.MaxTokens)
	require.Equal(t, 2, second.CacheBreakpoints, "the system prompt and the assistant's tool call")
	require.Equal(t, "tool", second.Messages[3].Role)
	require.Equal(t, "toolu_1", second.Messages[3].ToolCallID)
	require.Positive(t, resp2.Usage.CacheReadTokens)
	require.Equal(t, second.CacheReadTokens, resp2.Usage.CacheReadTokens)
	require.Equal(t, first.CacheWriteTokens, resp2.Usage.CacheReadTokens, "what the first call wrote is what the second reads")
	require.GreaterOrEqual(t, resp2.Usage.InputTokens, resp2.Usage.CacheReadTokens+resp2.Usage.CacheWriteTokens,
		"InputTokens counts the cached tokens too")
}

func TestAnthropicMergesConsecutiveToolResults(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	r := nativeRouter(t, srv, llm.ProtocolAnthropic)
	_, err := r.Complete(t.Context(), llm.Request{Model: "anthropic/m", Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "two lookups"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "f", Arguments: `{}`}, {ID: "b", Name: "f", Arguments: `not json`}}},
		{Role: llm.RoleTool, ToolCallID: "a", Content: "one"},
		{Role: llm.RoleTool, ToolCallID: "b", Content: "two"},
		{Role: llm.RoleUser, Content: "and now?"},
	}})
	require.NoError(t, err)
	raw := string(srv.Calls()[0].Raw)
	// One user message holds both results and the new text: roles alternate.
	require.Equal(t, 3, strings.Count(raw, `"role":`), raw)
	require.Contains(t, raw, `"tool_use_id":"a"`)
	require.Contains(t, raw, `"tool_use_id":"b"`)
}

func TestAnthropicStreams(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	srv.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"Hel", "lo ", "there"}}
	})
	r := nativeRouter(t, srv, llm.ProtocolAnthropic)
	var got []string
	resp, err := r.Complete(t.Context(), llm.Request{Model: "anthropic/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
		OnText: func(d string) { got = append(got, d) }})
	require.NoError(t, err)
	require.Equal(t, []string{"Hel", "lo ", "there"}, got)
	require.Equal(t, "Hello there", resp.Text)
	require.Equal(t, llm.StopEnd, resp.StopReason)
	require.Positive(t, resp.Usage.OutputTokens)
	require.True(t, srv.Calls()[0].Stream)

	// A streamed tool call arrives whole.
	srv.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "t1", Name: "lookup", Arguments: `{"query":"a long enough query"}`}}}
	})
	resp, err = r.Complete(t.Context(), llm.Request{Model: "anthropic/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
		Tools: []llm.Tool{{Name: "lookup"}}, OnText: func(string) {}})
	require.NoError(t, err)
	require.Equal(t, []llm.ToolCall{{ID: "t1", Name: "lookup", Arguments: `{"query":"a long enough query"}`}}, resp.ToolCalls)

	// A cut stream is retryable.
	srv.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"a", "b", "c"}, BreakAfter: 2}
	})
	_, err = r.Complete(t.Context(), llm.Request{Model: "anthropic/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, OnText: func(string) {}})
	requireLLMError(t, err, true, 0)
}

func TestAnthropicJSONAndThinking(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	r := nativeRouter(t, srv, llm.ProtocolAnthropic)
	schema := map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}}
	resp, err := r.Complete(t.Context(), llm.Request{Model: "anthropic/m", JSONSchema: schema, ReasoningEffort: "medium", MaxTokens: 8000,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	require.JSONEq(t, `{"message":"echo: hi"}`, resp.Text)
	raw := string(srv.Calls()[0].Raw)
	require.Contains(t, raw, `"thinking":{"budget_tokens":4096,"type":"enabled"}`)
	require.Contains(t, raw, `"output_config":{"format":{"schema":`)

	_, err = r.Complete(t.Context(), llm.Request{Model: "anthropic/m", JSONObject: true, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	require.Contains(t, srv.Calls()[1].Messages[0].Content, "one JSON object")
}

func TestAnthropicErrors(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	r := nativeRouter(t, srv, llm.ProtocolAnthropic)
	req := llm.Request{Model: "anthropic/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	for _, tc := range []struct {
		reply     testmodel.Reply
		retryable bool
		wait      time.Duration
	}{
		{testmodel.Reply{Status: http.StatusTooManyRequests, RetryAfter: "7"}, true, 7 * time.Second},
		{testmodel.Reply{Status: http.StatusInternalServerError}, true, 0},
		{testmodel.Reply{Status: 529}, true, 0},
		{testmodel.Reply{Status: http.StatusUnauthorized}, true, 0},
		{testmodel.Reply{Status: http.StatusBadRequest, ErrorMessage: "messages.0: bad"}, false, 0},
	} {
		srv.SetHandler(func(testmodel.Call) testmodel.Reply { return tc.reply })
		for _, stream := range []bool{false, true} {
			req.OnText = nil
			if stream {
				req.OnText = func(string) {}
			}
			_, err := r.Complete(t.Context(), req)
			e := requireLLMError(t, err, tc.retryable, tc.reply.Status)
			require.Equal(t, tc.wait, e.RetryAfter, "status %d", tc.reply.Status)
			require.NotContains(t, e.Message, "test-key")
		}
	}
	require.Equal(t, 10, srv.CallCount(), "one attempt per call: the SDK's retries are off")

	srv.SetContextLimit(1)
	_, err := r.Complete(t.Context(), llm.Request{Model: "anthropic/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("long ", 20)}}})
	e := requireLLMError(t, err, true, http.StatusBadRequest)
	require.True(t, e.ContextLength, e.Message)

	closed := closedURL(t)
	r = llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"anthropic": {BaseURL: closed, Protocol: llm.ProtocolAnthropic}}})
	_, err = r.Complete(t.Context(), req)
	requireLLMError(t, err, true, 0)
}

func requireLLMError(t *testing.T, err error, retryable bool, status int) *llm.Error {
	t.Helper()
	var e *llm.Error
	require.True(t, errors.As(err, &e), "%v", err)
	require.Equal(t, retryable, e.Retryable, e.Message)
	require.Equal(t, status, e.StatusCode, e.Message)
	return e
}

// closedURL is a URL on which nothing listens.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr
}

func TestAnthropicDefaultMaxTokensByModel(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	var asked []string
	r := llm.NewRouter(llm.RouterOptions{
		Endpoints: map[string]llm.Endpoint{"claude": {BaseURL: srv.Root, Protocol: llm.ProtocolAnthropic}},
		DefaultMaxTokens: func(model string) int {
			asked = append(asked, model)
			return 64000
		},
	})
	_, err := r.Complete(t.Context(), llm.Request{Model: "claude/sonnet", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	require.Equal(t, []string{"claude/sonnet"}, asked, "asked by the catalogue's name, provider/model")
	require.Equal(t, 64000, srv.Calls()[0].MaxTokens, "a large default does not trip the SDK's non-streaming limit: our timeout governs")
}
