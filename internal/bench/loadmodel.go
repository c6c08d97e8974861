package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"golang.org/x/sync/errgroup"
)

// startLoadModel is the load's model: an OpenAI-compatible chat-completions
// endpoint that answers "echo: " and the last message's text at once, and
// keeps nothing (internal/testmodel keeps every call it served, which
// would count in this process's memory).
//
// It stands in for a model, whose work is not the runtime's, so it reads
// no more of a request than it needs: the model's name at its start and
// the last user message's content near its end (lastUserText), not the
// whole conversation, which by turn 200 is tens of KB that a decode would
// scan on the measured path. A body it cannot read that way is decoded
// whole.
func startLoadModel() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		model, text, ok := skimRequest(body)
		if !ok {
			if model, text, ok = decodeRequest(body); !ok {
				http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-bench", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": text}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
		})
	}))
}

// echoOf is the load model's answer to a last message's content.
func echoOf(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return "echo: " + s
	}
	return "echo"
}

// skimRequest reads the model's name (the body's first field, as the
// runtime writes it) and the last user message's content, decoding only
// those two values.
func skimRequest(body []byte) (model, text string, ok bool) {
	const first = `{"model":`
	const user = `{"role":"user","content":`
	if !bytes.HasPrefix(body, []byte(first)) {
		return "", "", false
	}
	if json.NewDecoder(bytes.NewReader(body[len(first):])).Decode(&model) != nil {
		return "", "", false
	}
	at := bytes.LastIndex(body, []byte(user))
	if at < 0 {
		return "", "", false
	}
	var content json.RawMessage
	if json.NewDecoder(bytes.NewReader(body[at+len(user):])).Decode(&content) != nil {
		return "", "", false
	}
	return model, echoOf(content), true
}

// decodeRequest reads a body the way any client may write it.
func decodeRequest(body []byte) (model, text string, ok bool) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		return "", "", false
	}
	return req.Model, echoOf(req.Messages[len(req.Messages)-1].Content), true
}

// parallel runs f(0..n-1), at most k at a time.
func parallel(n, k int, f func(i int)) {
	var g errgroup.Group
	g.SetLimit(k)
	for i := range n {
		g.Go(func() error { f(i); return nil })
	}
	_ = g.Wait() // f returns no error
}
