package activities

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/mcp"
	"github.com/agenttask/agenttask/internal/mcp/mcptest"
)

// attrsOf is a span's attributes by key.
func attrsOf(s tracetest.SpanStub) map[string]attribute.Value {
	out := map[string]attribute.Value{}
	for _, kv := range s.Attributes {
		out[string(kv.Key)] = kv.Value
	}
	return out
}

// A model request made under the activity's span gets a child span named
// and attributed by the GenAI conventions: the request, the response's
// model, finish reason and usage; a failed one its error type.
func TestAModelRequestHasAGenAISpan(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	ctx, activitySpan := tp.Tracer("test").Start(context.Background(), "RunActivity:ModelTurn")

	temp := 0.2
	req := llm.Request{Model: "openai/gpt-4o-mini", MaxTokens: 500, Temperature: &temp, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	a := &Activities{Models: fakeModel{resp: llm.Response{Text: "hello", StopReason: llm.StopEnd, Model: "gpt-4o-mini-2024-07-18",
		Usage: contract.Usage{InputTokens: 120, OutputTokens: 9, CacheReadTokens: 100}}}}
	_, err := a.complete(ctx, req)
	require.NoError(t, err)
	a.Models = fakeModel{resp: llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "lookup"}}, Model: "gpt-4o-mini"}}
	_, err = a.complete(ctx, req)
	require.NoError(t, err)
	a.Models = fakeModel{err: &llm.Error{Retryable: true, StatusCode: 429, Message: "slow down"}}
	_, err = a.complete(ctx, req)
	require.Error(t, err)
	activitySpan.End()

	var chats []tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == "chat gpt-4o-mini" {
			chats = append(chats, s)
		}
	}
	require.Len(t, chats, 3, "one span a request")
	for _, s := range chats {
		require.Equal(t, trace.SpanKindClient, s.SpanKind)
		require.Equal(t, activitySpan.SpanContext().SpanID(), s.Parent.SpanID(), "a child of the activity's span")
		at := attrsOf(s)
		require.Equal(t, "chat", at["gen_ai.operation.name"].AsString())
		require.Equal(t, "openai", at["gen_ai.provider.name"].AsString())
		require.Equal(t, "gpt-4o-mini", at["gen_ai.request.model"].AsString())
		require.EqualValues(t, 500, at["gen_ai.request.max_tokens"].AsInt64())
		require.Equal(t, 0.2, at["gen_ai.request.temperature"].AsFloat64())
	}
	answered := attrsOf(chats[0])
	require.Equal(t, "gpt-4o-mini-2024-07-18", answered["gen_ai.response.model"].AsString())
	require.Equal(t, []string{"stop"}, answered["gen_ai.response.finish_reasons"].AsStringSlice())
	require.EqualValues(t, 120, answered["gen_ai.usage.input_tokens"].AsInt64())
	require.EqualValues(t, 9, answered["gen_ai.usage.output_tokens"].AsInt64())
	require.EqualValues(t, 100, answered["gen_ai.usage.cache_read.input_tokens"].AsInt64())
	require.NotContains(t, answered, "gen_ai.usage.cache_creation.input_tokens", "no cache write reported, none recorded")
	require.Equal(t, codes.Unset, chats[0].Status.Code)

	require.Equal(t, []string{"tool_calls"}, attrsOf(chats[1])["gen_ai.response.finish_reasons"].AsStringSlice())

	failed := attrsOf(chats[2])
	require.Equal(t, "rate_limited", failed["error.type"].AsString())
	require.Equal(t, codes.Error, chats[2].Status.Code)
	require.NotContains(t, failed, "gen_ai.usage.input_tokens")
}

// An MCP tool call the runtime makes for the model has an execute_tool
// span named for the function the model called; a call the model reads as
// an error (the tool's own, or arguments that do not fit) is marked so.
func TestAnMCPToolCallHasAnExecuteToolSpan(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	ctx, activitySpan := tp.Tracer("test").Start(context.Background(), "RunActivity:CallMCPTool")

	srv := mcptest.New(t)
	pool := mcp.NewPool(mcp.Servers{"tools": {Name: "tools", URL: srv.URL()}}, nil)
	t.Cleanup(func() { _ = pool.Close() })
	a := &Activities{MCP: pool}
	schema := json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)
	tool := func(name string) MCPTool {
		return MCPTool{Function: "tools_" + name, Capability: "tools", Server: "tools", Tool: name, InputSchema: schema}
	}
	res, err := a.CallMCPTool(ctx, CallMCPToolInput{Tool: tool("echo"), Arguments: json.RawMessage(`{"message":"hi"}`)})
	require.NoError(t, err)
	require.False(t, res.IsError, res.Content)
	res, err = a.CallMCPTool(ctx, CallMCPToolInput{Tool: tool("fail"), Arguments: json.RawMessage(`{"message":"no such order"}`)})
	require.NoError(t, err)
	require.True(t, res.IsError)
	res, err = a.CallMCPTool(ctx, CallMCPToolInput{Tool: tool("echo"), Arguments: json.RawMessage(`{"message":7}`)})
	require.NoError(t, err)
	require.True(t, res.IsError, "arguments that do not fit the schema")
	activitySpan.End()

	var calls []tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == "execute_tool tools_echo" || s.Name == "execute_tool tools_fail" {
			calls = append(calls, s)
		}
	}
	require.Len(t, calls, 3, "one span a call")
	for _, s := range calls {
		require.Equal(t, activitySpan.SpanContext().SpanID(), s.Parent.SpanID())
		at := attrsOf(s)
		require.Equal(t, "execute_tool", at["gen_ai.operation.name"].AsString())
		require.Equal(t, "extension", at["gen_ai.tool.type"].AsString())
		require.Equal(t, "tools", at["mcp.server.name"].AsString())
	}
	require.Equal(t, "tools_echo", attrsOf(calls[0])["gen_ai.tool.name"].AsString())
	require.Equal(t, codes.Unset, calls[0].Status.Code, "the tool answered")
	require.NotContains(t, attrsOf(calls[0]), "error.type")
	for _, s := range calls[1:] {
		require.Equal(t, "tool_error", attrsOf(s)["error.type"].AsString())
		require.Equal(t, codes.Error, s.Status.Code)
	}
}
