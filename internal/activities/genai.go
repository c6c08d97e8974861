package activities

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenttask/agenttask/internal/llm"
)

// A model request's span, named and attributed by the OpenTelemetry GenAI
// semantic conventions (docs/configuration.md#genai-spans), so standard GenAI
// dashboards read it: "chat {model}", a client span, child of the
// activity's RunActivity span. It is started in the activity, which a
// workflow replay never runs again, so a replay or a sticky-cache eviction
// records no second span of a call.
const (
	genAITracer = "agenttask/genai"

	attrOperation     = "gen_ai.operation.name"
	attrProvider      = "gen_ai.provider.name"
	attrRequestModel  = "gen_ai.request.model"
	attrMaxTokens     = "gen_ai.request.max_tokens"
	attrTemperature   = "gen_ai.request.temperature"
	attrTopP          = "gen_ai.request.top_p"
	attrResponseModel = "gen_ai.response.model"
	attrFinish        = "gen_ai.response.finish_reasons"
	attrInputTokens   = "gen_ai.usage.input_tokens"
	attrOutputTokens  = "gen_ai.usage.output_tokens"
	attrCacheRead     = "gen_ai.usage.cache_read.input_tokens"
	attrCacheWrite    = "gen_ai.usage.cache_creation.input_tokens"
	attrErrorType     = "error.type"
	attrToolName      = "gen_ai.tool.name"
	attrToolType      = "gen_ai.tool.type"
	attrToolDesc      = "gen_ai.tool.description"
	attrMCPServer     = "mcp.server.name" // which of the operator's servers

	operationChat = "chat"
	operationTool = "execute_tool"
)

// startModelSpan starts the span of one model request. The tracer is the
// one that made the activity's span (Temporal's tracing interceptor puts
// it in ctx); without one the span records nothing.
func startModelSpan(ctx context.Context, req llm.Request) (context.Context, trace.Span) {
	provider, model, _ := strings.Cut(req.Model, "/")
	attrs := []attribute.KeyValue{
		attribute.String(attrOperation, operationChat),
		attribute.String(attrProvider, provider),
		attribute.String(attrRequestModel, model),
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int(attrMaxTokens, req.MaxTokens))
	}
	if req.Temperature != nil {
		attrs = append(attrs, attribute.Float64(attrTemperature, *req.Temperature))
	}
	if req.TopP != nil {
		attrs = append(attrs, attribute.Float64(attrTopP, *req.TopP))
	}
	tracer := trace.SpanFromContext(ctx).TracerProvider().Tracer(genAITracer)
	return tracer.Start(ctx, operationChat+" "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endModelSpan records the answer (model, finish reason, usage) or the
// error, and ends the span.
func endModelSpan(span trace.Span, resp llm.Response, err error) {
	defer span.End()
	if err != nil {
		span.SetAttributes(attribute.String(attrErrorType, errorType(err)))
		span.SetStatus(codes.Error, err.Error())
		return
	}
	model := resp.Model
	if _, name, ok := strings.Cut(model, "/"); ok {
		model = name
	}
	span.SetAttributes(
		attribute.String(attrResponseModel, model),
		attribute.StringSlice(attrFinish, []string{finishReason(resp)}),
		attribute.Int(attrInputTokens, resp.Usage.InputTokens),
		attribute.Int(attrOutputTokens, resp.Usage.OutputTokens),
	)
	if resp.Usage.CacheReadTokens > 0 {
		span.SetAttributes(attribute.Int(attrCacheRead, resp.Usage.CacheReadTokens))
	}
	if resp.Usage.CacheWriteTokens > 0 {
		span.SetAttributes(attribute.Int(attrCacheWrite, resp.Usage.CacheWriteTokens))
	}
}

// finishReason is the answer's stop reason in the conventions' words.
func finishReason(resp llm.Response) string {
	switch {
	case len(resp.ToolCalls) > 0:
		return "tool_calls"
	case resp.StopReason == llm.StopMaxTokens:
		return "length"
	case resp.StopReason == llm.StopRefused:
		return "content_filter"
	}
	return "stop"
}

// errorType names a failed request's error for error.type: its retry
// class (retryType), else "error".
func errorType(err error) string {
	if t := retryType(err); t != "" {
		return t
	}
	var le *llm.Error
	if errors.As(err, &le) && le.StatusCode != 0 {
		return "http_error"
	}
	return "error"
}

// startToolSpan starts the span of an MCP tool call the runtime makes for
// the model, "execute_tool {name}" by the same conventions, the name being
// the one the model called (gen_ai.tool.type extension: run by the agent's
// side, not the model's client). Like a model request's, it is made in the
// activity, once a call.
func startToolSpan(ctx context.Context, tool MCPTool) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		attribute.String(attrOperation, operationTool),
		attribute.String(attrToolName, tool.Function),
		attribute.String(attrToolType, "extension"),
		attribute.String(attrMCPServer, tool.Server),
	}
	if tool.Description != "" {
		attrs = append(attrs, attribute.String(attrToolDesc, tool.Description))
	}
	tracer := trace.SpanFromContext(ctx).TracerProvider().Tracer(genAITracer)
	return tracer.Start(ctx, operationTool+" "+tool.Function, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// endToolSpan records how the call ended: an error the model reads
// (error.type tool_error), a failure the activity retries, or success.
func endToolSpan(span trace.Span, res *CallMCPToolResult, err error) {
	defer span.End()
	switch {
	case err != nil:
		span.SetAttributes(attribute.String(attrErrorType, "error"))
		span.SetStatus(codes.Error, err.Error())
	case res != nil && res.IsError:
		span.SetAttributes(attribute.String(attrErrorType, "tool_error"))
		span.SetStatus(codes.Error, clip(res.Content, 200))
	}
}
