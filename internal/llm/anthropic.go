package llm

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agenttask/agenttask/contract"
)

// DefaultAnthropicBaseURL is used when ANTHROPIC_API_KEY is set without
// ANTHROPIC_BASE_URL. The SDK appends "v1/messages".
const DefaultAnthropicBaseURL = "https://api.anthropic.com"

// DefaultAnthropicMaxTokens is sent when a request leaves MaxTokens 0 and the
// router knows no default for the model: the Messages API requires one.
const DefaultAnthropicMaxTokens = 4096

// anthropicClient speaks Anthropic's Messages API through the official SDK,
// one attempt per call: the SDK's own retries are off, because the activity's
// retry policy owns retries, and its errors become *Error as the
// OpenAI-compatible client's do.
type anthropicClient struct {
	errs      *endpointClient // provider, key and timeout for error messages
	sdk       anthropic.Client
	maxTokens func(model string) int
}

func newAnthropicClient(provider string, ep Endpoint, hc *http.Client, timeout time.Duration, maxTokens func(string) int) *anthropicClient {
	base := ep.BaseURL
	if base == "" {
		base = DefaultAnthropicBaseURL
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), // configuration comes from ours, never from ANTHROPIC_* read behind our back
		option.WithBaseURL(strings.TrimRight(base, "/") + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if ep.APIKey != "" {
		opts = append(opts, option.WithAPIKey(ep.APIKey))
	}
	return &anthropicClient{
		errs:      &endpointClient{provider: provider, endpoint: ep, http: hc, timeout: timeout},
		sdk:       anthropic.NewClient(opts...),
		maxTokens: maxTokens,
	}
}

func (c *anthropicClient) complete(ctx context.Context, model string, req Request) (Response, error) {
	params, opts, err := c.params(model, req)
	if err != nil {
		return Response{}, c.errs.errorf(model, false, 0, err, "cannot build the request: %v", err)
	}
	if req.OnText != nil {
		return c.stream(ctx, model, params, opts, req.OnText)
	}
	attemptCtx, cancel := context.WithTimeout(ctx, c.errs.timeout)
	defer cancel()
	// A request timeout of our own also keeps the SDK from refusing large
	// max_tokens without streaming.
	opts = append(opts, option.WithRequestTimeout(c.errs.timeout))
	msg, err := c.sdk.Messages.New(attemptCtx, params, opts...)
	if err != nil {
		return Response{}, c.mapError(ctx, attemptCtx, model, err)
	}
	return c.response(model, msg), nil
}

// stream reads the SDK's event stream, handing text deltas to onText and
// accumulating the message; the client's timeout bounds each wait for data.
func (c *anthropicClient) stream(ctx context.Context, model string, params anthropic.MessageNewParams, opts []option.RequestOption, onText func(string)) (Response, error) {
	attemptCtx, idle, cancel := startIdleTimer(ctx, c.errs.timeout)
	defer cancel()
	opts = append(opts, option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if err == nil && resp.Body != nil {
			resp.Body = struct {
				io.Reader
				io.Closer
			}{idle.reader(resp.Body), resp.Body}
		}
		return resp, err
	}))
	s := c.sdk.Messages.NewStreaming(attemptCtx, params, opts...)
	defer s.Close()
	var msg anthropic.Message
	stopped := false
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return Response{}, c.errs.errorf(model, true, http.StatusOK, err, "malformed stream: %v", err)
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				onText(ev.Delta.Text)
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := s.Err(); err != nil {
		return Response{}, c.mapError(ctx, attemptCtx, model, err)
	}
	if !stopped {
		if ctx.Err() != nil || context.Cause(attemptCtx) != nil {
			return Response{}, c.errs.transportError(ctx, attemptCtx, model, io.ErrUnexpectedEOF)
		}
		return Response{}, c.errs.errorf(model, true, http.StatusOK, io.ErrUnexpectedEOF, "stream ended before the answer was complete")
	}
	return c.response(model, &msg), nil
}

// response maps a Message onto Response.
func (c *anthropicClient) response(model string, m *anthropic.Message) Response {
	out := Response{Model: string(m.Model), Provider: c.errs.provider, StopReason: anthropicStop(string(m.StopReason))}
	if out.Model == "" {
		out.Model = model
	}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := strings.TrimSpace(string(b.Input))
			if args == "" || args == "null" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	out.Text = text.String()
	out.Usage = anthropicUsage(m.Usage)
	return out
}

// anthropicUsage is Anthropic's usage as contract.Usage. InputTokens counts
// every prompt token, as OpenAI's prompt_tokens does: Anthropic reports
// cache reads and writes beside input_tokens, so they are added in.
func anthropicUsage(u anthropic.Usage) contract.Usage {
	return contract.Usage{
		InputTokens:      int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
		OutputTokens:     int(u.OutputTokens),
		CacheReadTokens:  int(u.CacheReadInputTokens),
		CacheWriteTokens: int(u.CacheCreationInputTokens),
	}
}

// anthropicStop maps stop_reason onto our three outcomes.
func anthropicStop(reason string) StopReason {
	switch reason {
	case "max_tokens", "model_context_window_exceeded":
		return StopMaxTokens
	case "refusal":
		return StopRefused
	default: // end_turn, stop_sequence, tool_use, pause_turn
		return StopEnd
	}
}
