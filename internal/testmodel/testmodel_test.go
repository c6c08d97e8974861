package testmodel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/testmodel"
)

func start(t *testing.T) *testmodel.Server {
	t.Helper()
	s := testmodel.Start()
	t.Cleanup(s.Close)
	return s
}

func post(t *testing.T, url, body string) (int, http.Header, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("response is not JSON: %s", raw)
	}
	return resp.StatusCode, resp.Header, m
}

func TestCompletionShapeAndEcho(t *testing.T) {
	s := start(t)
	status, _, m := post(t, s.URL+"/chat/completions", `{"model":"m1","max_tokens":50,"temperature":0.5,"messages":[
		{"role":"system","content":"sys"},{"role":"user","content":"old"},{"role":"assistant","content":"reply"},
		{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"}]}]}`)
	if status != 200 {
		t.Fatalf("status %d: %v", status, m)
	}
	for _, k := range []string{"id", "object", "created", "model", "choices", "usage"} {
		if _, ok := m[k]; !ok {
			t.Errorf("response lacks %q: %v", k, m)
		}
	}
	choice := m["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	if msg["role"] != "assistant" || msg["content"] != "echo: a\nb" || choice["finish_reason"] != "stop" || m["object"] != "chat.completion" || m["model"] != "m1" {
		t.Fatalf("unexpected completion %v", m)
	}
	usage := m["usage"].(map[string]any)
	if usage["prompt_tokens"].(float64) < 1 || usage["total_tokens"].(float64) != usage["prompt_tokens"].(float64)+usage["completion_tokens"].(float64) {
		t.Fatalf("usage %v", usage)
	}

	calls := s.Calls()
	if len(calls) != 1 || s.CallCount() != 1 {
		t.Fatalf("calls = %d", len(calls))
	}
	c := calls[0]
	if c.Seq != 1 || c.Model != "m1" || c.MaxTokens != 50 || c.Temperature == nil || *c.Temperature != 0.5 || len(c.Messages) != 5 || c.Messages[4].Content != "b" || c.JSONSchema != nil || len(c.Raw) == 0 {
		t.Fatalf("call recorded as %+v", c)
	}
}

func TestEchoJSONSchema(t *testing.T) {
	got := testmodel.Echo(testmodel.Call{
		Messages: []testmodel.Message{{Role: "user", Content: "hi"}},
		JSONSchema: map[string]any{"type": "object", "properties": map[string]any{
			"message": map[string]any{"type": "string"},
			"s":       map[string]any{"type": "string"}, "n": map[string]any{"type": "number"}, "i": map[string]any{"type": "integer"},
			"b": map[string]any{"type": "boolean"}, "a": map[string]any{"type": "array"}, "o": map[string]any{"type": "object"},
			"e": map[string]any{"type": "string", "enum": []any{"x", "y"}}, "u": map[string]any{},
		}},
	})
	want := `{"a":[],"b":false,"e":"x","i":0,"message":"echo: hi","n":0,"o":{},"s":"","u":null}`
	if got.Text != want {
		t.Fatalf("got %s\nwant %s", got.Text, want)
	}
}

func TestScriptedRepliesAndErrors(t *testing.T) {
	s := start(t)
	s.SetHandler(func(c testmodel.Call) testmodel.Reply {
		switch c.Seq {
		case 1:
			return testmodel.Reply{Status: 429, ErrorMessage: "slow down", RetryAfter: "3"}
		case 2:
			return testmodel.Reply{Refusal: "no", FinishReason: "stop", PromptTokens: 9, CompletionTokens: 2}
		default:
			return testmodel.Reply{RawBody: "{not json"}
		}
	})
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`

	status, h, m := post(t, s.URL+"/chat/completions", body)
	if status != 429 || h.Get("Retry-After") != "3" || m["error"].(map[string]any)["message"] != "slow down" {
		t.Fatalf("error reply: %d %v %v", status, h, m)
	}
	_, _, m = post(t, s.URL+"/chat/completions", body)
	msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["refusal"] != "no" || msg["content"] != nil || m["usage"].(map[string]any)["prompt_tokens"] != 9.0 {
		t.Fatalf("refusal reply: %v", m)
	}
	resp, err := http.Post(s.URL+"/chat/completions", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(raw) != "{not json" {
		t.Fatalf("raw body = %q", raw)
	}
}

func TestNotFound(t *testing.T) {
	s := start(t)
	status, _, _ := post(t, s.URL+"/completions", `{}`)
	if status != 404 {
		t.Fatalf("wrong path: %d", status)
	}
	resp, err := http.Get(s.URL + "/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if s.CallCount() != 0 {
		t.Fatal("unrouted requests were recorded")
	}
}

func TestHoldRelease(t *testing.T) {
	s := start(t)
	s.Hold()
	r := llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: s.URL}}})

	var wg sync.WaitGroup
	results := make([]llm.Response, 3)
	errs := make([]error, 3)
	for i := range 3 {
		wg.Go(func() {
			results[i], errs[i] = r.Complete(context.Background(), llm.Request{
				Model: "test/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprint(i)}},
			})
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitForCalls(ctx, 3); err != nil {
		t.Fatal(err)
	}
	// Held calls have arrived but are unanswered; the answer may still be scripted now.
	s.SetHandler(func(c testmodel.Call) testmodel.Reply { return testmodel.Reply{Text: "late " + c.Messages[0].Content} })
	s.Release()
	wg.Wait()
	for i := range 3 {
		if errs[i] != nil || results[i].Text != fmt.Sprint("late ", i) {
			t.Errorf("call %d: %+v %v", i, results[i], errs[i])
		}
	}
	if s.Cancelled() != 0 {
		t.Fatalf("Cancelled = %d", s.Cancelled())
	}
}

func TestCancelWhileHeldAndDelayed(t *testing.T) {
	s := start(t)
	r := llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: s.URL}}})
	req := llm.Request{Model: "test/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}
	wait, cancelWait := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelWait()

	// Held.
	s.Hold()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := r.Complete(ctx, req); done <- err }()
	if err := s.WaitForCalls(wait, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("held call: %v", err)
	}
	if err := s.WaitForCancelled(wait, 1); err != nil {
		t.Fatal(err)
	}
	s.Release()

	// Delayed.
	s.SetHandler(func(testmodel.Call) testmodel.Reply { return testmodel.Reply{Delay: time.Hour} })
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.Complete(ctx, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delayed call: %v", err)
	}
	if err := s.WaitForCancelled(wait, 2); err != nil {
		t.Fatal(err)
	}
	if s.CallCount() != 2 {
		t.Fatalf("CallCount = %d", s.CallCount())
	}
}

func TestCloseReleasesHeldRequests(t *testing.T) {
	s := testmodel.Start()
	s.Hold()
	done := make(chan int, 1)
	go func() {
		resp, err := http.Post(s.URL+"/chat/completions", "application/json", bytes.NewBufferString(`{"model":"m","messages":[]}`))
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitForCalls(ctx, 1); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a held request")
	}
	if code := <-done; code != 0 && code != http.StatusServiceUnavailable {
		t.Fatalf("held request answered %d", code)
	}
}

func TestWaitForCallsHonoursContext(t *testing.T) {
	s := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.WaitForCalls(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

// The llm client and the test model must agree on the wire format.
func TestWithLLMClient(t *testing.T) {
	s := start(t)
	r := llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: s.URL, APIKey: "k"}}})
	temp := 0.1
	resp, err := r.Complete(context.Background(), llm.Request{
		Model:       "test/model-a",
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: "hello"}},
		MaxTokens:   12,
		Temperature: &temp,
		JSONSchema:  map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}, "ok": map[string]any{"type": "boolean"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `{"message":"echo: hello","ok":false}` || resp.StopReason != llm.StopEnd || resp.Model != "model-a" || resp.Usage.InputTokens < 1 {
		t.Fatalf("got %+v", resp)
	}
	c := s.Calls()[0]
	if c.MaxTokens != 12 || *c.Temperature != 0.1 || c.JSONSchema == nil || c.Header.Get("Authorization") != "Bearer k" {
		t.Fatalf("call %+v", c)
	}

	s.SetHandler(func(testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Status: 503, ErrorMessage: "overloaded", RetryAfter: "2"}
	})
	_, err = r.Complete(context.Background(), llm.Request{Model: "test/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	var e *llm.Error
	if !errors.As(err, &e) || !e.Retryable || e.RetryAfter != 2*time.Second || e.StatusCode != 503 {
		t.Fatalf("err = %#v", err)
	}
}

func TestToolCallsAndImagesRoundTripThroughTheClient(t *testing.T) {
	s := testmodel.Start()
	defer s.Close()
	s.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if c.Seq == 1 {
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "call_1", Name: "delegate", Arguments: `{"message":"hi"}`}}}
		}
		return testmodel.Reply{Text: "done"}
	})
	r := llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: s.URL}}})
	req := llm.Request{
		Model: "test/m",
		Tools: []llm.Tool{{Name: "delegate", Description: "d", Parameters: map[string]any{"type": "object"}}},
		Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
			{Type: "text", Text: "look"}, {Type: "image_url", ImageURL: "data:image/png;base64,AAAA"},
		}}},
	}
	resp, err := r.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "delegate" || resp.ToolCalls[0].Arguments != `{"message":"hi"}` {
		t.Fatalf("tool calls %+v", resp.ToolCalls)
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: "child said hi"})
	resp, err = r.Complete(context.Background(), req)
	if err != nil || resp.Text != "done" {
		t.Fatalf("%+v %v", resp, err)
	}
	calls := s.Calls()
	if calls[0].Tools[0] != "delegate" || calls[0].Messages[0].Images[0] != "data:image/png;base64,AAAA" || calls[0].Messages[0].Content != "look" {
		t.Fatalf("first call %+v", calls[0])
	}
	m := calls[1].Messages
	if m[1].ToolCalls[0].ID != "call_1" || m[2].Role != "tool" || m[2].ToolCallID != "call_1" || m[2].Content != "child said hi" {
		t.Fatalf("second call %+v", m)
	}
}
