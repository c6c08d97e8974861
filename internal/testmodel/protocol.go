package testmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// chatRequest is the part of an OpenAI chat-completions request we read.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []wireToolCall  `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int      `json:"max_tokens"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
	Temperature         *float64 `json:"temperature"`
	ResponseFormat      *struct {
		JSONSchema *struct {
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

func parseCall(raw []byte) (Call, error) {
	var req chatRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return Call{}, fmt.Errorf("request body is not a chat completion request: %v", err)
	}
	c := Call{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, Stream: req.Stream, Raw: raw}
	if req.StreamOptions != nil {
		c.IncludeUsage = req.StreamOptions.IncludeUsage
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = req.MaxCompletionTokens
	}
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		c.JSONSchema = rf.JSONSchema.Schema
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, t.Function.Name)
	}
	for i, m := range req.Messages {
		msg, err := contentMessage(m.Content)
		if err != nil {
			return Call{}, fmt.Errorf("messages[%d]: %v", i, err)
		}
		msg.Role, msg.ToolCallID = m.Role, m.ToolCallID
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		c.Messages = append(c.Messages, msg)
	}
	if err := checkToolOrder(c.Messages); err != nil {
		return Call{}, err
	}
	return c, nil
}

// checkToolOrder refuses what OpenAI refuses: an assistant message with
// tool_calls must be followed by one tool message per call, before any
// other message, and a tool message must answer such a call.
func checkToolOrder(msgs []Message) error {
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == "tool" {
			return fmt.Errorf("messages[%d]: messages with role 'tool' must be a response to a preceding message with 'tool_calls'", i)
		}
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		want := map[string]bool{}
		for _, tc := range m.ToolCalls {
			want[tc.ID] = true
		}
		for len(want) > 0 {
			i++
			if i >= len(msgs) || msgs[i].Role != "tool" || !want[msgs[i].ToolCallID] {
				return fmt.Errorf("messages[%d]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'", i)
			}
			delete(want, msgs[i].ToolCallID)
		}
	}
	return nil
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// contentMessage reads content given as a string, null, or a list of parts.
func contentMessage(raw json.RawMessage) (Message, error) {
	var m Message
	if len(raw) == 0 || string(raw) == "null" {
		return m, nil
	}
	if json.Unmarshal(raw, &m.Content) == nil {
		return m, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
		File struct {
			FileData string `json:"file_data"`
		} `json:"file"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return m, fmt.Errorf("content is neither a string nor a list of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			b.WriteString(p.Text)
		case "image_url":
			m.Images = append(m.Images, p.ImageURL.URL)
		case "file":
			m.Files = append(m.Files, p.File.FileData)
		}
	}
	m.Content = b.String()
	return m, nil
}

// answer is a normal (200) reply worked out for either wire shape.
type answer struct {
	text, refusal      string
	finish             string
	calls              []wireToolCall
	prompt, completion int
	cached             int // of prompt, read from the simulated cache
}

func prepare(c Call, r Reply) answer {
	a := answer{text: r.text(), refusal: r.Refusal, finish: r.FinishReason, prompt: r.PromptTokens, completion: r.CompletionTokens}
	if a.finish == "" {
		a.finish = "stop"
		if len(r.ToolCalls) > 0 {
			a.finish = "tool_calls"
		}
	}
	if a.prompt == 0 {
		n := 0
		for _, m := range c.Messages {
			n += len(m.Content)
		}
		a.prompt = approxTokens(n)
	}
	if a.completion == 0 {
		a.completion = approxTokens(len(a.text) + len(a.refusal))
	}
	a.cached = min(c.CacheReadTokens, a.prompt)
	for _, tc := range r.ToolCalls {
		w := wireToolCall{ID: tc.ID, Type: "function"}
		w.Function.Name, w.Function.Arguments = tc.Name, tc.Arguments
		a.calls = append(a.calls, w)
	}
	return a
}

type usage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details,omitempty"`
}

// promptDetails is sent only when the simulated cache was read
// (SetPromptCache), so other tests see the usage they always saw.
type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func (a answer) usage() usage {
	u := usage{PromptTokens: a.prompt, CompletionTokens: a.completion, TotalTokens: a.prompt + a.completion}
	if a.cached > 0 {
		u.PromptTokensDetails = &promptDetails{CachedTokens: a.cached}
	}
	return u
}

func completionID(c Call) string { return fmt.Sprintf("chatcmpl-testmodel-%d", c.Seq) }

func writeReply(w http.ResponseWriter, c Call, r Reply) {
	if writeScripted(w, r, writeError) {
		return
	}

	a := prepare(c, r)
	var content *string // null only for a bare refusal, as OpenAI sends it
	if a.text != "" || a.refusal == "" {
		content = &a.text
	}
	if len(a.calls) > 0 && a.text == "" {
		content = nil
	}
	type message struct {
		Role      string         `json:"role"`
		Content   *string        `json:"content"`
		Refusal   string         `json:"refusal,omitempty"`
		ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	}
	writeJSON(w, http.StatusOK, struct {
		ID      string   `json:"id"`
		Object  string   `json:"object"`
		Created int64    `json:"created"`
		Model   string   `json:"model"`
		Choices []choice `json:"choices"`
		Usage   usage    `json:"usage"`
	}{
		ID:      completionID(c),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   c.Model,
		Choices: []choice{{Message: message{Role: "assistant", Content: content, Refusal: a.refusal, ToolCalls: a.calls}, FinishReason: a.finish}},
		Usage:   a.usage(),
	})
}

func writeError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	type errObj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	writeJSON(w, status, struct {
		Error errObj `json:"error"`
	}{errObj{Message: msg, Type: "testmodel_error"}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func approxTokens(n int) int { return max(1, n/4) }

// writeScripted answers what a reply scripts instead of an answer, in
// every protocol alike: a Retry-After header, an error status (its raw
// body, or the protocol's error document from writeErr), or a raw body. It
// says whether it answered.
func writeScripted(w http.ResponseWriter, r Reply, writeErr func(http.ResponseWriter, int, string)) bool {
	if r.RetryAfter != "" {
		w.Header().Set("Retry-After", r.RetryAfter)
	}
	switch {
	case r.Status != 0 && r.Status != http.StatusOK && r.RawBody != "":
		writeRaw(w, r.Status, r.RawBody)
	case r.Status != 0 && r.Status != http.StatusOK:
		writeErr(w, r.Status, r.ErrorMessage)
	case r.RawBody != "":
		writeRaw(w, http.StatusOK, r.RawBody)
	default:
		return false
	}
	return true
}
