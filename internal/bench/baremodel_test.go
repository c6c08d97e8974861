package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// The baseline sends the model its whole conversation, each conversation
// its own, and a failed call adds nothing to it, so its retry sends the
// same request.
func TestBareModelSendsTheConversation(t *testing.T) {
	var fail atomic.Bool
	var got [][]bareMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req bareRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("request: %v", err)
		}
		got = append(got, req.Messages)
		if fail.Load() {
			http.Error(w, `{"error":{"message":"down"}}`, http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{
			"role": "assistant", "content": "echo: " + req.Messages[len(req.Messages)-1].Content}}}})
	}))
	defer srv.Close()
	m := newBareModel(srv.URL)
	ctx := context.Background()
	for _, text := range []string{"one", "two"} {
		if answer, err := m.ask(ctx, "a", text); err != nil || answer != "echo: "+text {
			t.Fatalf("ask %q: %q, %v", text, answer, err)
		}
	}
	fail.Store(true)
	if _, err := m.ask(ctx, "a", "three"); err == nil {
		t.Fatal("a failing model answered")
	}
	fail.Store(false)
	if _, err := m.ask(ctx, "a", "three"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ask(ctx, "b", "other"); err != nil {
		t.Fatal(err)
	}

	want := [][]string{
		{"user:one"},
		{"user:one", "assistant:echo: one", "user:two"},
		{"user:one", "assistant:echo: one", "user:two", "assistant:echo: two", "user:three"}, // failed
		{"user:one", "assistant:echo: one", "user:two", "assistant:echo: two", "user:three"}, // its retry
		{"user:other"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d requests, want %d", len(got), len(want))
	}
	for i, msgs := range got {
		var flat []string
		for _, m := range msgs {
			flat = append(flat, m.Role+":"+m.Content)
		}
		if len(flat) != len(want[i]) {
			t.Fatalf("request %d: %q, want %q", i, flat, want[i])
		}
		for j := range flat {
			if flat[j] != want[i][j] {
				t.Fatalf("request %d: %q, want %q", i, flat, want[i])
			}
		}
	}
	if sizes := m.chats.requestSizes("a"); len(sizes) != 3 || !(sizes[0] < sizes[1] && sizes[1] < sizes[2]) {
		t.Errorf("answered request sizes of a: %v, want three, growing", sizes)
	}
}
