package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"time"

	"golang.org/x/sync/errgroup"
)

// startLoadModel is the load's model: an OpenAI-compatible chat-completions
// endpoint that answers "echo: " and the last message's text at once, and
// keeps nothing (internal/testmodel keeps every call it served, which
// would count in this process's memory).
func startLoadModel() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		text := "echo"
		var s string
		if json.Unmarshal(req.Messages[len(req.Messages)-1].Content, &s) == nil {
			text = "echo: " + s
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-bench", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": text}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
		})
	}))
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
