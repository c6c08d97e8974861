package testmodel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agenttask/agenttask/internal/llm"
)

// Over the limit, the server refuses with OpenAI's body, and the client
// reads it as a context-length error; at the limit it answers.
func TestContextLimit(t *testing.T) {
	s := start(t)
	s.SetContextLimit(100)
	r := llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: s.URL}}})
	ask := func(text string, stream bool) error {
		req := llm.Request{Model: "test/m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Type: "text", Text: text}}}}}
		if stream {
			req.OnText = func(string) {}
		}
		_, err := r.Complete(context.Background(), req)
		return err
	}
	if err := ask(strings.Repeat("a", 403), false); err != nil { // 100 tokens
		t.Fatalf("at the limit: %v", err)
	}
	for _, stream := range []bool{false, true} {
		err := ask(strings.Repeat("a", 404), stream) // 101 tokens
		var e *llm.Error
		if !errors.As(err, &e) || !e.ContextLength || e.StatusCode != 400 ||
			!strings.Contains(e.Message, "This model's maximum context length is 100 tokens. However, your messages resulted in 101 tokens.") {
			t.Fatalf("stream %v: err = %#v", stream, err)
		}
	}
	calls := s.Calls()
	if len(calls) != 3 || calls[0].Refused || !calls[1].Refused || calls[0].Tokens != 100 || calls[1].Tokens != 101 {
		t.Fatalf("calls %+v", calls)
	}
	_, _, body := post(t, s.URL+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("b", 500)+`"}]}`)
	e := body["error"].(map[string]any)
	if e["code"] != "context_length_exceeded" || e["type"] != "invalid_request_error" || e["param"] != "messages" {
		t.Fatalf("body %v", body)
	}

	s.SetContextLimit(0) // off again
	if err := ask(strings.Repeat("a", 4000), false); err != nil {
		t.Fatal(err)
	}
}
