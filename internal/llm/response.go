package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"
)

// Reading an answer. openai-go decodes it; its typed fields are lenient
// where ours were strict (content 42 reads as "42", a list of parts as its
// JSON text), so content goes through contentText from the raw JSON.

func (c *endpointClient) parseResponse(model string, status int, data []byte) (Response, error) {
	var cr openai.ChatCompletion
	if err := json.Unmarshal(data, &cr); err != nil {
		return Response{}, c.errorf(model, false, status, nil, "malformed response body: %v: %s", err, snippet(data))
	}
	if len(cr.Choices) == 0 {
		// Some proxies answer 200 with an error object instead of a completion.
		if f, ok := cr.JSON.ExtraFields["error"]; ok && f.Raw() != "null" {
			return Response{}, c.errorf(model, false, status, nil, "malformed response: no choices, error: %s", endpointMessage(data))
		}
		return Response{}, c.errorf(model, false, status, nil, "malformed response: no choices: %s", snippet(data))
	}
	choice := cr.Choices[0]
	text, err := contentText(choice.Message.JSON.Content)
	if err != nil {
		return Response{}, c.errorf(model, false, status, nil, "malformed response: %v", err)
	}

	a := answer{
		model:   cr.Model,
		text:    text,
		refusal: choice.Message.Refusal,
		finish:  choice.FinishReason,
	}
	if cr.JSON.Usage.Valid() {
		a.usage = &cr.Usage
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
	usage     *openai.CompletionUsage
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
		out.Usage = Usage{InputTokens: int(a.usage.PromptTokens), OutputTokens: int(a.usage.CompletionTokens)}
	}
	return out
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
func contentText(f respjson.Field) (string, error) {
	raw := bytes.TrimSpace([]byte(f.Raw()))
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
// (openai-go's *openai.Error reads the first shape only.)
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
