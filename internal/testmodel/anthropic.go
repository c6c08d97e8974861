package testmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Anthropic's Messages API: POST /v1/messages.

var anthropicProtocol = protocol{
	name:               ProtocolAnthropic,
	parse:              func(raw []byte, _ *http.Request) (Call, error) { return parseAnthropic(raw) },
	writeError:         writeAnthropicError,
	writeContextLength: writeAnthropicContextLength,
	writeReply:         writeAnthropicReply,
	writeStream:        (*Server).writeAnthropicStream,
}

type anthropicBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"` // tool_result: a string or text blocks
	Source       *anthropicSource
	CacheControl json.RawMessage `json:"cache_control"`
}

type anthropicSource struct {
	Type      string `json:"type"` // base64, url, text
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

type anthropicRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	System    json.RawMessage
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Stream       bool     `json:"stream"`
	Temperature  *float64 `json:"temperature"`
	OutputConfig *struct {
		Format *struct {
			Schema map[string]any `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

func parseAnthropic(raw []byte) (Call, error) {
	var req anthropicRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return Call{}, fmt.Errorf("request body is not a Messages API request: %v", err)
	}
	var tools struct {
		Tools  []json.RawMessage `json:"tools"`
		System json.RawMessage   `json:"system"`
	}
	_ = json.Unmarshal(raw, &tools) // the same body, decoded above
	if req.MaxTokens <= 0 {
		return Call{}, fmt.Errorf("max_tokens: Field required")
	}
	c := Call{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, Stream: req.Stream, Raw: raw}
	if oc := req.OutputConfig; oc != nil && oc.Format != nil {
		c.JSONSchema = oc.Format.Schema
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, t.Name)
	}
	var key keyBuilder
	for _, t := range tools.Tools {
		key.block("tool", t)
	}
	system, err := anthropicBlocks(tools.System)
	if err != nil {
		return Call{}, fmt.Errorf("system: %v", err)
	}
	var sys []string
	for i, b := range system {
		sys = append(sys, b.Text)
		key.block("system", tools.System, i)
	}
	if len(sys) > 0 {
		c.Messages = append(c.Messages, Message{Role: "system", Content: strings.Join(sys, "\n")})
	}
	for i, m := range req.Messages {
		blocks, err := anthropicBlocks(m.Content)
		if err != nil {
			return Call{}, fmt.Errorf("messages[%d]: %v", i, err)
		}
		if m.Role != "user" && m.Role != "assistant" {
			return Call{}, fmt.Errorf("messages[%d].role: Input should be 'user' or 'assistant'", i)
		}
		c.Messages = append(c.Messages, anthropicMessages(m.Role, blocks)...)
		for j := range blocks {
			key.block(m.Role, m.Content, j)
		}
	}
	if err := checkToolOrder(c.Messages); err != nil {
		return Call{}, err
	}
	c.cache = key.key()
	c.CacheBreakpoints = len(c.cache.breakpoints)
	if n := c.CacheBreakpoints; n > 0 {
		c.CachePrefixBytes = c.cache.breakpoints[n-1]
	}
	if c.CacheBreakpoints > 4 {
		return Call{}, fmt.Errorf("a maximum of 4 blocks with cache_control may be provided, found %d", c.CacheBreakpoints)
	}
	return c, nil
}

// anthropicBlocks reads content given as a string or a list of blocks.
func anthropicBlocks(raw json.RawMessage) ([]anthropicBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("content is neither a string nor a list of blocks")
	}
	return blocks, nil
}

// anthropicMessages turns one API message into the script's messages: tool
// results become tool messages, as in the OpenAI protocol, so that one
// script (and Echo) reads every protocol alike.
func anthropicMessages(role string, blocks []anthropicBlock) []Message {
	var out []Message
	m := Message{Role: role}
	var text strings.Builder
	for _, b := range blocks {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "image":
			m.Images = append(m.Images, b.Source.dataURL())
		case "document":
			m.Files = append(m.Files, b.Source.dataURL())
		case "tool_use":
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
		case "tool_result":
			res, _ := anthropicBlocks(b.Content)
			var t strings.Builder
			for _, r := range res {
				t.WriteString(r.Text)
			}
			out = append(out, Message{Role: "tool", ToolCallID: b.ToolUseID, Content: t.String()})
		}
	}
	m.Content = text.String()
	if m.Content != "" || len(m.Images) > 0 || len(m.Files) > 0 || len(m.ToolCalls) > 0 || len(out) == 0 {
		out = append(out, m)
	}
	return out
}

func (s *anthropicSource) dataURL() string {
	switch {
	case s == nil:
		return ""
	case s.Type == "url":
		return s.URL
	case s.Type == "text":
		return "data:text/plain," + s.Data
	}
	return "data:" + s.MediaType + ";base64," + s.Data
}

// keyBuilder writes the canonical prompt: each block's JSON without its
// cache_control, and where the marked blocks end.
type keyBuilder struct {
	b                       strings.Builder
	breakpoints, boundaries []int
}

// block adds block i of the list raw (or raw itself when no index is given).
func (k *keyBuilder) block(role string, raw json.RawMessage, index ...int) {
	var obj map[string]json.RawMessage
	if len(index) > 0 {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil && index[0] < len(list) {
			raw = list[index[0]]
		} else { // string content: one text block
			raw, _ = json.Marshal(map[string]any{"type": "text", "text": json.RawMessage(raw)})
		}
	}
	_ = json.Unmarshal(raw, &obj)
	_, marked := obj["cache_control"]
	delete(obj, "cache_control")
	b, _ := json.Marshal(obj) // sorted keys: canonical
	k.b.WriteString(role)
	k.b.Write(b)
	k.boundaries = append(k.boundaries, k.b.Len())
	if marked {
		k.breakpoints = append(k.breakpoints, k.b.Len())
	}
}

func (k *keyBuilder) key() cacheKey {
	return cacheKey{prompt: k.b.String(), breakpoints: k.breakpoints, boundaries: k.boundaries}
}

// anthropicAnswer is a reply in the Messages API's terms.
type anthropicAnswer struct {
	answer
	stop                      string
	input, cacheRead, cacheWr int
}

func prepareAnthropic(c Call, r Reply) anthropicAnswer {
	a := anthropicAnswer{answer: prepare(c, r)}
	prompt := a.prompt
	if r.PromptTokens == 0 && c.cache.prompt != "" {
		prompt = approxTokens(len(c.cache.prompt)) // the basis of the cache's token counts
	}
	a.input, a.cacheRead, a.cacheWr = cachedUsage(prompt, c)
	switch {
	case a.refusal != "":
		a.stop = "refusal"
		a.text = a.text + a.refusal
	case a.finish == "length":
		a.stop = "max_tokens"
	case a.finish == "tool_calls":
		a.stop = "tool_use"
	default:
		a.stop = "end_turn"
	}
	return a
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
}

func (a anthropicAnswer) usage(output int) anthropicUsage {
	return anthropicUsage{InputTokens: a.input, OutputTokens: output, CacheReadInputTokens: a.cacheRead, CacheCreationInputTokens: a.cacheWr}
}

// content is the answer's blocks: its text, then its tool calls.
func (a anthropicAnswer) content() []map[string]any {
	out := []map[string]any{}
	if a.text != "" {
		out = append(out, map[string]any{"type": "text", "text": a.text})
	}
	for _, tc := range a.calls {
		out = append(out, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": toolArgs(tc.Function.Arguments)})
	}
	return out
}

// toolArgs is a scripted call's arguments as a JSON object ({} when they are not one).
func toolArgs(args string) json.RawMessage {
	var obj map[string]any
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}

func messageID(c Call) string { return fmt.Sprintf("msg_testmodel_%d", c.Seq) }

func writeAnthropicReply(w http.ResponseWriter, c Call, r Reply) {
	if writeScripted(w, r, writeAnthropicError) {
		return
	}
	a := prepareAnthropic(c, r)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": messageID(c), "type": "message", "role": "assistant", "model": c.Model,
		"content": a.content(), "stop_reason": a.stop, "stop_sequence": nil, "usage": a.usage(a.completion),
	})
}

// anthropicErrorType is the error.type the API gives each status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func writeAnthropicError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
		if status == 529 {
			msg = "Overloaded"
		}
	}
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": anthropicErrorType(status), "message": msg}})
}

func writeAnthropicContextLength(w http.ResponseWriter, limit, tokens int) {
	writeAnthropicError(w, http.StatusBadRequest, fmt.Sprintf("prompt is too long: %d tokens > %d maximum", tokens, limit))
}
