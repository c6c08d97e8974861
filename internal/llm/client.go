package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/agenttask/agenttask/contract"
)

// Endpoint is one model server.
type Endpoint struct {
	// BaseURL is like "https://api.openai.com/v1"; requests go to
	// BaseURL+"/chat/completions" (protocol openai), BaseURL+"/v1/messages"
	// (anthropic, e.g. "https://api.anthropic.com") or
	// BaseURL+"/v1beta/models/..." (google).
	BaseURL string
	// APIKey is sent as the protocol wants it (a bearer token, x-api-key,
	// x-goog-api-key) when non-empty.
	APIKey string
	// Protocol is the wire protocol: ProtocolOpenAI (the default when ""),
	// ProtocolAnthropic or ProtocolGoogle.
	Protocol string
}

// The wire protocols a provider may speak.
const (
	ProtocolOpenAI    = "openai"
	ProtocolAnthropic = "anthropic"
	ProtocolGoogle    = "google"
)

const (
	// maxResponseBytes bounds what we buffer from an endpoint; a chat answer is
	// far smaller, so anything bigger is a misbehaving server.
	maxResponseBytes = 16 << 20
	// maxEndpointMessage bounds the endpoint text copied into an Error.
	maxEndpointMessage = 1000
)

// endpointClient sends chat completions to one endpoint, one attempt per call.
type endpointClient struct {
	provider string
	endpoint Endpoint
	http     *http.Client
	timeout  time.Duration
}

type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []wireMessage   `json:"messages"`
	Tools          []wireTool      `json:"tools,omitempty"`
	Stream         bool            `json:"stream"`
	StreamOptions  *streamOptions  `json:"stream_options,omitempty"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	TopP           *float64        `json:"top_p,omitempty"`
	Reasoning      string          `json:"reasoning_effort,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

// streamOptions asks for a final chunk with the usage, which a stream
// otherwise lacks.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *schemaSpec `json:"json_schema,omitempty"`
}

type schemaSpec struct {
	Name   string         `json:"name"`
	Schema map[string]any `json:"schema"`
	Strict bool           `json:"strict"`
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   json.RawMessage `json:"content"`
			Refusal   string          `json:"refusal"`
			ToolCalls []wireToolCall  `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"` // cached ones included
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (c *endpointClient) complete(ctx context.Context, model string, req Request) (Response, error) {
	body, err := encodeChatRequest(c.buildRequest(model, req))
	if err != nil {
		// e.g. a NaN temperature or a schema holding a func: retrying cannot help.
		return Response{}, c.errorf(model, false, 0, nil, "cannot encode request: %v", err)
	}

	stream := req.OnText != nil
	var attemptCtx context.Context
	var cancel context.CancelFunc
	var idle *idleTimer
	if stream {
		// A healthy stream may last longer than c.timeout in total, so there
		// the timeout bounds each wait for data instead.
		attemptCtx, idle, cancel = startIdleTimer(ctx, c.timeout)
	} else {
		attemptCtx, cancel = context.WithTimeout(ctx, c.timeout)
	}
	defer cancel()
	httpReq, err := http.NewRequestWithContext(attemptCtx, http.MethodPost, c.endpoint.BaseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		// Not the *url.Error text: it repeats the URL, which may carry credentials.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Response{}, c.errorf(model, false, 0, err, "invalid endpoint base URL: %v", err)
	}
	httpReq.Header.Set("Content-Type", "application/json")
	if stream {
		httpReq.Header.Set("Accept", "text/event-stream")
	} else {
		httpReq.Header.Set("Accept", "application/json")
	}
	if c.endpoint.APIKey != "" {
		httpReq.Header.Set("Authorization", "Bearer "+c.endpoint.APIKey)
	}

	resp, err := c.http.Do(httpReq)
	if err != nil {
		return Response{}, c.transportError(ctx, attemptCtx, model, err)
	}
	defer resp.Body.Close()
	var respBody io.Reader = resp.Body
	if idle != nil {
		respBody = idle.reader(resp.Body)
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode <= 299
	if stream && ok && !isJSON(resp.Header) {
		return c.readStream(ctx, attemptCtx, model, resp.StatusCode, respBody, req.OnText)
	}
	data, err := io.ReadAll(io.LimitReader(respBody, maxResponseBytes+1))
	if err != nil {
		return Response{}, c.transportError(ctx, attemptCtx, model, err)
	}

	if !ok {
		long := isContextLength(resp.StatusCode, string(data))
		e := c.errorf(model, long || retryableStatus(resp.StatusCode), resp.StatusCode, nil,
			"HTTP %s: %s", statusText(resp.StatusCode), endpointMessage(data))
		e.RetryAfter = retryAfter(resp.Header, time.Now())
		e.ContextLength = long
		return Response{}, e
	}
	if len(data) > maxResponseBytes {
		return Response{}, c.errorf(model, false, resp.StatusCode, nil, "response larger than %d bytes", maxResponseBytes)
	}
	out, err := c.parseResponse(model, resp.StatusCode, data)
	if err == nil && stream && out.Text != "" {
		// The server ignored "stream" and sent one completion: its text is
		// then the only delta.
		req.OnText(out.Text)
	}
	return out, err
}

func (c *endpointClient) buildRequest(model string, req Request) chatRequest {
	cr := chatRequest{
		Model:       model,
		Messages:    wireMessages(req.Messages),
		Tools:       wireTools(req.Tools),
		MaxTokens:   req.MaxTokens,
		Temperature: req.Temperature,
		TopP:        req.TopP,
		Reasoning:   req.ReasoningEffort,
	}
	if req.OnText != nil {
		cr.Stream = true
		cr.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if req.JSONObject && req.JSONSchema == nil {
		cr.ResponseFormat = &responseFormat{Type: "json_object"}
	}
	if req.JSONSchema != nil {
		cr.ResponseFormat = &responseFormat{
			Type:       "json_schema",
			JSONSchema: &schemaSpec{Name: schemaName(req.SchemaName), Schema: req.JSONSchema},
		}
	}
	return cr
}

func (c *endpointClient) parseResponse(model string, status int, data []byte) (Response, error) {
	var cr chatResponse
	if err := json.Unmarshal(data, &cr); err != nil {
		return Response{}, c.errorf(model, false, status, nil, "malformed response body: %v: %s", err, snippet(data))
	}
	if len(cr.Choices) == 0 {
		// Some proxies answer 200 with an error object instead of a completion.
		if len(cr.Error) > 0 && string(cr.Error) != "null" {
			return Response{}, c.errorf(model, false, status, nil, "malformed response: no choices, error: %s", endpointMessage(data))
		}
		return Response{}, c.errorf(model, false, status, nil, "malformed response: no choices: %s", snippet(data))
	}
	choice := cr.Choices[0]
	text, err := contentText(choice.Message.Content)
	if err != nil {
		return Response{}, c.errorf(model, false, status, nil, "malformed response: %v", err)
	}

	a := answer{
		model:   cr.Model,
		text:    text,
		refusal: choice.Message.Refusal,
		finish:  choice.FinishReason,
		usage:   cr.Usage,
	}
	for _, tc := range choice.Message.ToolCalls {
		a.toolCalls = append(a.toolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return c.response(model, a), nil
}

// answer is what the endpoint said, read from one completion or gathered
// from a stream's chunks. Both paths build their Response with response, so
// they cannot drift apart.
type answer struct {
	model     string // as reported, "" when not
	text      string
	refusal   string
	finish    string // finish_reason
	usage     *wireUsage
	toolCalls []ToolCall
}

func (c *endpointClient) response(model string, a answer) Response {
	out := Response{
		Text:       a.text,
		StopReason: stopReason(a.finish),
		Model:      a.model,
		Provider:   c.provider,
		ToolCalls:  a.toolCalls,
	}
	if out.Model == "" {
		out.Model = model
	}
	if a.refusal != "" {
		out.Text = a.refusal
		out.StopReason = StopRefused
	}
	if a.usage != nil {
		out.Usage = openAIUsage(*a.usage)
	}
	return out
}

// openAIUsage is an OpenAI-compatible endpoint's usage as contract.Usage:
// prompt_tokens counts the cached ones too.
func openAIUsage(u wireUsage) contract.Usage {
	out := contract.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CacheReadTokens = d.CachedTokens
	}
	return out
}

// transportError classifies a failure without a (complete) HTTP response.
// ctx is the caller's context, attemptCtx the one bounded by RequestTimeout.
func (c *endpointClient) transportError(ctx, attemptCtx context.Context, model string, err error) *Error {
	switch {
	case ctx.Err() != nil:
		// The caller gave up (activity cancelled or timed out). Not the
		// endpoint's fault, so not a permanent failure; errors.Is sees ctx.Err().
		return c.errorf(model, true, 0, ctx.Err(), "request abandoned: %v", context.Cause(ctx))
	case errors.Is(attemptCtx.Err(), context.DeadlineExceeded):
		return c.errorf(model, true, 0, err, "request timed out after %s", c.timeout)
	case errors.Is(context.Cause(attemptCtx), errIdleTimeout):
		// A streamed attempt: the transport error is just "canceled", so
		// the cause is the timeout itself (errors.Is sees DeadlineExceeded).
		return c.errorf(model, true, 0, errIdleTimeout, "request timed out: no data from the endpoint for %s", c.timeout)
	default:
		return c.errorf(model, true, 0, err, "request failed: %v", err)
	}
}

// errorf builds an *Error whose message names the provider and model, with
// the API key scrubbed in case an endpoint or transport echoed it.
func (c *endpointClient) errorf(model string, retryable bool, status int, cause error, format string, args ...any) *Error {
	msg := fmt.Sprintf("llm: %s (model %q): ", c.provider, model) + fmt.Sprintf(format, args...)
	if k := c.endpoint.APIKey; k != "" {
		msg = strings.ReplaceAll(msg, k, "[redacted]")
	}
	return &Error{Retryable: retryable, StatusCode: status, Message: msg, cause: cause}
}

// stopReason maps OpenAI finish_reason values onto our three outcomes.
func stopReason(finish string) StopReason {
	switch finish {
	case "length", "max_tokens":
		return StopMaxTokens
	case "content_filter":
		return StopRefused
	default: // "stop", "tool_calls", "function_call", "" and provider-specific ends
		return StopEnd
	}
}

// contentText accepts the content shapes compatible servers send: a string,
// null (e.g. tool calls) or a list of parts whose text parts are joined.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("message content is neither a string nor a list of parts: %s", snippet(raw))
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "output_text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// endpointMessage extracts the human message from an error body, accepting
// the shapes seen in the wild: {"error":{"message":..}}, {"error":".."},
// {"message":..} and [{"error":{..}}]; otherwise a snippet of the body.
func endpointMessage(body []byte) string {
	type errBody struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	var eb errBody
	if err := json.Unmarshal(body, &eb); err != nil {
		var list []errBody
		if json.Unmarshal(body, &list) != nil || len(list) == 0 {
			return snippet(body)
		}
		eb = list[0]
	}
	var obj struct {
		Message string `json:"message"`
	}
	var s string
	switch {
	case json.Unmarshal(eb.Error, &obj) == nil && obj.Message != "":
		return truncate(obj.Message, maxEndpointMessage)
	case json.Unmarshal(eb.Error, &s) == nil && s != "":
		return truncate(s, maxEndpointMessage)
	case eb.Message != "":
		return truncate(eb.Message, maxEndpointMessage)
	}
	return snippet(body)
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(empty body)"
	}
	return truncate(s, maxEndpointMessage)
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprint(code)
}

// truncate shortens s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

var schemaNameInvalid = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// schemaName fits the name to OpenAI's ^[a-zA-Z0-9_-]{1,64}$, which servers
// reject with a 400 otherwise.
func schemaName(name string) string {
	name = schemaNameInvalid.ReplaceAllString(name, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	if strings.Trim(name, "_") == "" {
		return "output"
	}
	return name
}
