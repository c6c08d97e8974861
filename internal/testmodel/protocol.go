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
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
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
	c := Call{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, Raw: raw}
	if c.MaxTokens == 0 {
		c.MaxTokens = req.MaxCompletionTokens
	}
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		c.JSONSchema = rf.JSONSchema.Schema
	}
	for i, m := range req.Messages {
		text, err := contentText(m.Content)
		if err != nil {
			return Call{}, fmt.Errorf("messages[%d]: %v", i, err)
		}
		c.Messages = append(c.Messages, Message{Role: m.Role, Content: text})
	}
	return c, nil
}

// contentText accepts a string, null, or a list of {"type":"text","text":..} parts.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content is neither a string nor a list of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

func writeReply(w http.ResponseWriter, c Call, r Reply) {
	if r.RetryAfter != "" {
		w.Header().Set("Retry-After", r.RetryAfter)
	}
	if r.Status != 0 && r.Status != http.StatusOK {
		if r.RawBody != "" {
			writeRaw(w, r.Status, r.RawBody)
			return
		}
		writeError(w, r.Status, r.ErrorMessage)
		return
	}
	if r.RawBody != "" {
		writeRaw(w, http.StatusOK, r.RawBody)
		return
	}

	finish := r.FinishReason
	if finish == "" {
		finish = "stop"
	}
	var content *string // null only for a bare refusal, as OpenAI sends it
	if r.Text != "" || r.Refusal == "" {
		content = &r.Text
	}
	prompt, completion := r.PromptTokens, r.CompletionTokens
	if prompt == 0 {
		n := 0
		for _, m := range c.Messages {
			n += len(m.Content)
		}
		prompt = approxTokens(n)
	}
	if completion == 0 {
		completion = approxTokens(len(r.Text) + len(r.Refusal))
	}

	type message struct {
		Role    string  `json:"role"`
		Content *string `json:"content"`
		Refusal string  `json:"refusal,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	}
	type usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
	writeJSON(w, http.StatusOK, struct {
		ID      string   `json:"id"`
		Object  string   `json:"object"`
		Created int64    `json:"created"`
		Model   string   `json:"model"`
		Choices []choice `json:"choices"`
		Usage   usage    `json:"usage"`
	}{
		ID:      fmt.Sprintf("chatcmpl-testmodel-%d", c.Seq),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   c.Model,
		Choices: []choice{{Message: message{Role: "assistant", Content: content, Refusal: r.Refusal}, FinishReason: finish}},
		Usage:   usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion},
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
