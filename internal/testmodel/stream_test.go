package testmodel_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// events posts a streamed request and returns the data of each event.
func events(t *testing.T, url, body string) (http.Header, []string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not a data line: %q", line)
		}
		out = append(out, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return resp.Header, out
}

func TestStreamShape(t *testing.T) {
	s := start(t)
	h, evs := events(t, s.URL+"/chat/completions",
		`{"model":"m1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"big  world"}]}`)
	if ct := h.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	if len(evs) < 2 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("events %q", evs)
	}
	var chunks []map[string]any
	for _, e := range evs[:len(evs)-1] {
		var m map[string]any
		if err := json.Unmarshal([]byte(e), &m); err != nil {
			t.Fatalf("event %q: %v", e, err)
		}
		if m["id"] != "chatcmpl-testmodel-1" || m["object"] != "chat.completion.chunk" || m["model"] != "m1" || m["created"] == nil {
			t.Fatalf("chunk %v", m)
		}
		chunks = append(chunks, m)
	}
	// Echo's text, word by word; the role comes first; then the finish, then the usage.
	var text []string
	n := len(chunks)
	for i, c := range chunks[:n-2] {
		choice := c["choices"].([]any)[0].(map[string]any)
		delta := choice["delta"].(map[string]any)
		if role, ok := delta["role"]; (i == 0) != ok || (ok && role != "assistant") || choice["finish_reason"] != nil {
			t.Fatalf("delta chunk %d: %v", i, c)
		}
		text = append(text, delta["content"].(string))
	}
	if want := []string{"echo: ", "big  ", "world"}; !reflect.DeepEqual(text, want) {
		t.Fatalf("deltas %q, want %q", text, want)
	}
	finish := chunks[n-2]["choices"].([]any)[0].(map[string]any)
	if finish["finish_reason"] != "stop" || len(finish["delta"].(map[string]any)) != 0 {
		t.Fatalf("finish chunk %v", chunks[n-2])
	}
	if choices := chunks[n-1]["choices"].([]any); len(choices) != 0 {
		t.Fatalf("usage chunk %v", chunks[n-1])
	}
	usage := chunks[n-1]["usage"].(map[string]any)
	if usage["prompt_tokens"].(float64) < 1 || usage["total_tokens"].(float64) != usage["prompt_tokens"].(float64)+usage["completion_tokens"].(float64) {
		t.Fatalf("usage %v", usage)
	}
	if c := s.Calls()[0]; !c.Stream || !c.IncludeUsage {
		t.Fatalf("call %+v", c)
	}

	// Without include_usage there is no usage chunk.
	_, evs = events(t, s.URL+"/chat/completions", `{"model":"m1","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if len(evs) != 4 || strings.Contains(evs[2], "usage") {
		t.Fatalf("events %q", evs)
	}
	if c := s.Calls()[1]; !c.Stream || c.IncludeUsage {
		t.Fatalf("call %+v", c)
	}
}

func router(s *testmodel.Server) *llm.Router {
	return llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: s.URL}}})
}

// The streamed answer reads, through the llm client, exactly as the plain one.
func TestStreamMatchesPlainThroughLLMClient(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}}
	cases := map[string]struct {
		reply  testmodel.Reply
		schema map[string]any
		deltas []string // nil: the text's words
	}{
		"echo":        {reply: testmodel.Reply{}},
		"echo schema": {reply: testmodel.Reply{}, schema: schema},
		"chunks":      {reply: testmodel.Reply{Text: "ignored", Chunks: []string{"He", "llo, ", "wörld"}}, deltas: []string{"He", "llo, ", "wörld"}},
		"length":      {reply: testmodel.Reply{Text: "cut short", FinishReason: "length", PromptTokens: 3, CompletionTokens: 4}},
		"refusal":     {reply: testmodel.Reply{Refusal: "I can't help with that."}},
		"tool calls": {reply: testmodel.Reply{Text: "calling", ToolCalls: []testmodel.ToolCall{
			{ID: "call_1", Name: "search", Arguments: `{"q":"naïve résumé","n":3}`},
			{ID: "call_2", Name: "delegate", Arguments: `{}`},
		}}},
		"empty": {reply: testmodel.Reply{Text: ""}, deltas: []string{}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := start(t)
			if name != "echo" && name != "echo schema" {
				s.SetHandler(func(testmodel.Call) testmodel.Reply { return c.reply })
			}
			r := router(s)
			req := llm.Request{Model: "test/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello there"}}, JSONSchema: c.schema}
			plain, err := r.Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			var deltas []string
			req.OnText = func(d string) { deltas = append(deltas, d) }
			got, err := r.Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, plain) {
				t.Fatalf("streamed %+v\nplain    %+v", got, plain)
			}
			if calls := s.Calls(); calls[0].Stream || !calls[1].Stream || !calls[1].IncludeUsage {
				t.Fatalf("calls %+v", calls)
			}
			want := c.deltas
			if want == nil {
				want = strings.SplitAfter(got.Text, " ")
			}
			if len(want) == 0 {
				want = nil
			}
			if !reflect.DeepEqual(deltas, want) {
				t.Fatalf("deltas %q, want %q", deltas, want)
			}
		})
	}
}

// Chunks make the text of a plain answer too; errors stay plain JSON.
func TestChunksUnstreamedAndErrorsWhenStreaming(t *testing.T) {
	s := start(t)
	s.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if c.Seq == 1 {
			return testmodel.Reply{Chunks: []string{"a", "b"}}
		}
		return testmodel.Reply{Status: 429, ErrorMessage: "slow down", RetryAfter: "3"}
	})
	r := router(s)
	resp, err := r.Complete(context.Background(), llm.Request{Model: "test/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if err != nil || resp.Text != "ab" {
		t.Fatalf("%+v %v", resp, err)
	}
	_, err = r.Complete(context.Background(), llm.Request{Model: "test/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, OnText: func(string) {}})
	var e *llm.Error
	if !errors.As(err, &e) || e.StatusCode != 429 || e.RetryAfter != 3*time.Second || !strings.Contains(e.Message, "slow down") {
		t.Fatalf("err = %v", err)
	}
}

func TestBreakAfter(t *testing.T) {
	for _, c := range []struct {
		breakAfter int
		want       []string
	}{{2, []string{"a ", "b "}}, {9, []string{"a ", "b ", "c ", "d"}}} {
		s := start(t)
		s.SetHandler(func(testmodel.Call) testmodel.Reply {
			return testmodel.Reply{Chunks: []string{"a ", "b ", "c ", "d"}, BreakAfter: c.breakAfter}
		})
		var deltas []string
		_, err := router(s).Complete(context.Background(), llm.Request{
			Model: "test/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}},
			OnText: func(d string) { deltas = append(deltas, d) },
		})
		var e *llm.Error
		if !errors.As(err, &e) || !e.Retryable || !strings.Contains(e.Message, "stream ended") {
			t.Fatalf("BreakAfter %d: err = %v", c.breakAfter, err)
		}
		if !reflect.DeepEqual(deltas, c.want) {
			t.Fatalf("BreakAfter %d: deltas %q", c.breakAfter, deltas)
		}
	}
}

// BeforeChunk lets a test hold each delta back until the client has the one before.
func TestBeforeChunk(t *testing.T) {
	s := start(t)
	seen := make([]chan struct{}, 3)
	for i := range seen {
		seen[i] = make(chan struct{})
	}
	var mu sync.Mutex
	var order []int
	s.SetHandler(func(testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"a", "b", "c"}, BeforeChunk: func(i int) {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if i == 0 {
				return
			}
			select {
			case <-seen[i-1]:
			case <-time.After(5 * time.Second):
				t.Errorf("the client did not see delta %d before delta %d was due", i-1, i)
			}
		}}
	})
	n := 0
	resp, err := router(s).Complete(context.Background(), llm.Request{
		Model: "test/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}},
		OnText: func(string) { close(seen[n]); n++ },
	})
	if err != nil || resp.Text != "abc" || n != 3 {
		t.Fatalf("%+v %v after %d deltas", resp, err, n)
	}
	if !reflect.DeepEqual(order, []int{0, 1, 2}) {
		t.Fatalf("BeforeChunk calls %v", order)
	}
}

// A BeforeChunk that never returns does not keep the server waiting on a
// client that left, nor block Close.
func TestBeforeChunkReturnsWhenTheClientLeavesOrTheServerCloses(t *testing.T) {
	s := testmodel.Start()
	release := make(chan struct{})
	defer close(release)
	block := func(i int) {
		if i == 1 {
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
		}
	}
	s.SetHandler(func(testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"a", "b"}, BeforeChunk: block}
	})
	r := router(s)
	wait, cancelWait := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelWait()

	ctx, cancel := context.WithCancel(context.Background())
	req := llm.Request{Model: "test/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, OnText: func(string) { cancel() }}
	if _, err := r.Complete(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if err := s.WaitForCancelled(wait, 1); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	req.OnText = func(string) {}
	go func() { _, err := r.Complete(context.Background(), req); done <- err }()
	if err := s.WaitForCalls(wait, 2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // let the second call reach its BeforeChunk
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a BeforeChunk")
	}
	var e *llm.Error
	if err := <-done; !errors.As(err, &e) || !e.Retryable {
		t.Fatalf("err = %v", err)
	}
}

func TestFirstChunkAt(t *testing.T) {
	s := start(t)
	const pause = 50 * time.Millisecond
	s.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: "one two", BeforeChunk: func(i int) {
			if i == 0 {
				time.Sleep(pause) // the model "thinks" before its first token
			}
		}}
	})
	r := router(s)
	req := llm.Request{Model: "test/m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}
	if _, err := r.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if at := s.FirstChunkAt(1); !at.IsZero() {
		t.Fatalf("a plain call has FirstChunkAt %v", at)
	}

	var seenAt time.Time
	req.OnText = func(string) {
		if seenAt.IsZero() {
			seenAt = time.Now()
		}
	}
	started := time.Now()
	if _, err := r.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	at := s.FirstChunkAt(2)
	if at.Before(started.Add(pause)) || seenAt.Before(at) {
		t.Fatalf("started %v, first chunk written %v, seen %v", started, at, seenAt)
	}
	if !s.FirstChunkAt(3).IsZero() {
		t.Fatal("FirstChunkAt of a call that never came")
	}
}
