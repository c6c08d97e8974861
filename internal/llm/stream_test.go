package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenttask/agenttask/contract"
)

// chunk is one chat.completion.chunk event's JSON with a delta for choice 0;
// finish is its finish_reason (nil for null).
func chunk(delta map[string]any, finish any) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test-2024",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	})
	return string(b)
}

func textChunk(s string) string { return chunk(map[string]any{"content": s}, nil) }

func usageChunk(in, out int) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test-2024",
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
	return string(b)
}

// sse writes each event as "data: <event>\n\n", flushing after each.
func sse(w http.ResponseWriter, events ...string) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

// streamReply answers every request with these events.
func streamReply(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { sse(w, events...) }
}

// recorder is an OnText that records its deltas.
type recorder struct {
	mu     sync.Mutex
	deltas []string
}

func (r *recorder) onText(d string) {
	r.mu.Lock()
	r.deltas = append(r.deltas, d)
	r.mu.Unlock()
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.deltas...)
}

func streamed(model string, rec *recorder) Request {
	req := hello(model)
	req.OnText = rec.onText
	return req
}

func TestStreamText(t *testing.T) {
	f := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		// Comments and other fields are not data.
		io.WriteString(w, ": keep-alive\n\nevent: message\nid: 1\nretry: 100\r\n")
		sse(w,
			chunk(map[string]any{"role": "assistant", "content": ""}, nil),
			textChunk("Hel"), textChunk("lo "),
			chunk(map[string]any{"content": []any{map[string]any{"type": "text", "text": "world"}}}, nil),
			chunk(map[string]any{}, "stop"),
			usageChunk(11, 7), "[DONE]")
	})
	rec := &recorder{}
	resp, err := routerFor(f, "").Complete(context.Background(), streamed("test/gpt-test", rec))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rec.got(), []string{"Hel", "lo ", "world"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("deltas %q, want %q", got, want)
	}
	// Exactly what the plain path returns for the same answer.
	want := Response{Text: "Hello world", StopReason: StopEnd, Usage: contract.Usage{InputTokens: 11, OutputTokens: 7}, Model: "gpt-test-2024", Provider: "test"}
	if !reflect.DeepEqual(resp, want) {
		t.Fatalf("got %+v, want %+v", resp, want)
	}
	plain := newFakeEndpoint(t, reply(200, completion("Hello world", "stop")))
	if p, err := routerFor(plain, "").Complete(context.Background(), hello("test/gpt-test")); err != nil || !reflect.DeepEqual(p, resp) {
		t.Fatalf("plain path gave %+v, %v", p, err)
	}
	if got := f.lastHeader(t).Get("Accept"); got != "text/event-stream" {
		t.Fatalf("Accept = %q", got)
	}
}

func TestStreamRequestBody(t *testing.T) {
	f := newFakeEndpoint(t, streamReply(textChunk("x"), chunk(map[string]any{}, "stop"), "[DONE]"))
	if _, err := routerFor(f, "").Complete(context.Background(), streamed("test/m", &recorder{})); err != nil {
		t.Fatal(err)
	}
	body := f.lastBody(t)
	if body["stream"] != true || !reflect.DeepEqual(body["stream_options"], map[string]any{"include_usage": true}) {
		t.Fatalf("streamed request body %v", body)
	}

	plain := newFakeEndpoint(t, reply(200, completion("x", "stop")))
	if _, err := routerFor(plain, "").Complete(context.Background(), hello("test/m")); err != nil {
		t.Fatal(err)
	}
	body = plain.lastBody(t)
	if _, ok := body["stream_options"]; ok || body["stream"] != false {
		t.Fatalf("plain request body %v", body)
	}
	if got := plain.lastHeader(t).Get("Accept"); got != "application/json" {
		t.Fatalf("Accept = %q", got)
	}
}

func TestStreamUsageAbsentAndModelFallback(t *testing.T) {
	f := newFakeEndpoint(t, streamReply(`{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`, "[DONE]"))
	resp, err := routerFor(f, "").Complete(context.Background(), streamed("test/vendor/model-x", &recorder{}))
	if err != nil {
		t.Fatal(err)
	}
	want := Response{Text: "ok", StopReason: StopEnd, Model: "vendor/model-x", Provider: "test"}
	if !reflect.DeepEqual(resp, want) {
		t.Fatalf("got %+v, want %+v", resp, want)
	}
}

func TestStreamToolCalls(t *testing.T) {
	frag := func(index int, id, name, args string) string {
		fn := map[string]any{"arguments": args}
		tc := map[string]any{"index": index, "function": fn}
		if id != "" {
			tc["id"], tc["type"], fn["name"] = id, "function", name
		}
		return chunk(map[string]any{"tool_calls": []any{tc}}, nil)
	}
	f := newFakeEndpoint(t, streamReply(
		chunk(map[string]any{"role": "assistant", "content": nil}, nil),
		frag(0, "call_a", "search", ""),
		frag(0, "", "", `{"q":`),
		frag(1, "call_b", "delegate", `{"mess`),
		frag(0, "", "", `"go"}`),
		frag(1, "", "", `age":"héllo"}`),
		chunk(map[string]any{}, "tool_calls"),
		usageChunk(5, 9), "[DONE]"))
	rec := &recorder{}
	resp, err := routerFor(f, "").Complete(context.Background(), streamed("test/m", rec))
	if err != nil {
		t.Fatal(err)
	}
	want := Response{StopReason: StopEnd, Usage: contract.Usage{InputTokens: 5, OutputTokens: 9}, Model: "gpt-test-2024", Provider: "test", ToolCalls: []ToolCall{
		{ID: "call_a", Name: "search", Arguments: `{"q":"go"}`},
		{ID: "call_b", Name: "delegate", Arguments: `{"message":"héllo"}`},
	}}
	if !reflect.DeepEqual(resp, want) {
		t.Fatalf("got %+v\nwant %+v", resp, want)
	}
	if len(rec.got()) != 0 {
		t.Fatalf("OnText got %q for tool calls", rec.got())
	}
}

// Some servers send each call whole, all at index 0.
func TestStreamToolCallsWithoutIndex(t *testing.T) {
	f := newFakeEndpoint(t, streamReply(
		`{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":"{\"n\":1}"}}]}}]}`,
		`{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`, "[DONE]"))
	resp, err := routerFor(f, "").Complete(context.Background(), streamed("test/m", &recorder{}))
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{{ID: "a", Name: "x", Arguments: "{}"}, {ID: "b", Name: "y", Arguments: `{"n":1}`}}
	if !reflect.DeepEqual(resp.ToolCalls, want) {
		t.Fatalf("tool calls %+v", resp.ToolCalls)
	}
}

func TestStreamRefusal(t *testing.T) {
	f := newFakeEndpoint(t, streamReply(
		chunk(map[string]any{"role": "assistant", "content": nil, "refusal": ""}, nil),
		chunk(map[string]any{"refusal": "I can't "}, nil),
		chunk(map[string]any{"refusal": "help with that."}, nil),
		chunk(map[string]any{}, "stop"), "[DONE]"))
	rec := &recorder{}
	resp, err := routerFor(f, "").Complete(context.Background(), streamed("test/m", rec))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "I can't help with that." || resp.StopReason != StopRefused {
		t.Fatalf("got %+v", resp)
	}
	if got := rec.got(); !reflect.DeepEqual(got, []string{"I can't ", "help with that."}) {
		t.Fatalf("deltas %q", got)
	}
}

func TestStreamFinishReasons(t *testing.T) {
	for finish, want := range map[string]StopReason{"length": StopMaxTokens, "content_filter": StopRefused, "stop": StopEnd} {
		f := newFakeEndpoint(t, streamReply(textChunk("x"), chunk(map[string]any{}, finish), "[DONE]"))
		resp, err := routerFor(f, "").Complete(context.Background(), streamed("test/m", &recorder{}))
		if err != nil || resp.StopReason != want {
			t.Errorf("finish_reason %q: got %+v, %v; want %q", finish, resp, err, want)
		}
	}
}

func TestStreamCutIsRetryable(t *testing.T) {
	cases := map[string]http.HandlerFunc{
		// The connection is dropped mid-response.
		"aborted": func(w http.ResponseWriter, r *http.Request) {
			sse(w, textChunk("one "), textChunk("two"))
			panic(http.ErrAbortHandler)
		},
		// The response ends cleanly but without a finish_reason or [DONE].
		"closed": streamReply(textChunk("one "), textChunk("two")),
		// A half-written event is what a cut leaves, not a malformed chunk.
		"half event": func(w http.ResponseWriter, r *http.Request) {
			sse(w, textChunk("one "), textChunk("two"))
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"thr`)
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFakeEndpoint(t, h)
			rec := &recorder{}
			_, err := routerFor(f, "sk-k").Complete(context.Background(), streamed("test/m", rec))
			e := asError(t, err)
			if !e.Retryable || !strings.Contains(e.Message, "stream ended before the answer was complete") {
				t.Fatalf("got %+v", e)
			}
			if got := rec.got(); !reflect.DeepEqual(got, []string{"one ", "two"}) {
				t.Fatalf("deltas %q", got)
			}
		})
	}
}

// The answer is whole once finish_reason came; a missing [DONE] loses nothing.
func TestStreamEndingAfterFinishIsAccepted(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"closed": streamReply(textChunk("done"), chunk(map[string]any{}, "length")),
		"aborted": func(w http.ResponseWriter, r *http.Request) {
			sse(w, textChunk("done"), chunk(map[string]any{}, "length"))
			panic(http.ErrAbortHandler)
		},
		// No blank line after the last event, nor even a newline.
		"unterminated": func(w http.ResponseWriter, r *http.Request) {
			sse(w, textChunk("done"))
			io.WriteString(w, "data: "+chunk(map[string]any{}, "length"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeEndpoint(t, h)
			resp, err := routerFor(f, "").Complete(context.Background(), streamed("test/m", &recorder{}))
			if err != nil || resp.Text != "done" || resp.StopReason != StopMaxTokens {
				t.Fatalf("got %+v, %v", resp, err)
			}
		})
	}
}

// An error object mid-stream is the server failing after it accepted the
// request: retried, like a 5xx.
func TestStreamErrorChunkIsRetryable(t *testing.T) {
	f := newFakeEndpoint(t, streamReply(textChunk("a"), `{"error":{"message":"upstream overloaded","code":502}}`))
	_, err := routerFor(f, "").Complete(context.Background(), streamed("test/m", &recorder{}))
	e := asError(t, err)
	if !e.Retryable || !strings.Contains(e.Message, "upstream overloaded") {
		t.Fatalf("got %+v", e)
	}
}

func TestStreamMalformedIsNotRetryable(t *testing.T) {
	for name, c := range map[string]struct {
		events []string
		msg    string
	}{
		"not json":    {[]string{textChunk("a"), `<html>gateway</html>`}, "malformed stream chunk"},
		"bad content": {[]string{`{"choices":[{"index":0,"delta":{"content":42}}]}`}, "malformed stream chunk"},
		"no choices":  {[]string{"[DONE]"}, "no choices"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeEndpoint(t, streamReply(c.events...))
			_, err := routerFor(f, "").Complete(context.Background(), streamed("test/m", &recorder{}))
			e := asError(t, err)
			if e.Retryable || e.StatusCode != 200 || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("got %+v", e)
			}
		})
	}
}

func TestStreamHTTPErrorsAsPlain(t *testing.T) {
	for _, h := range []http.HandlerFunc{
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			reply(429, `{"error":{"message":"Rate limit reached"}}`)(w, r)
		},
		reply(400, `{"error":{"message":"This model's maximum context length is 8192 tokens"}}`),
		reply(404, `{"error":"model not found"}`),
		reply(503, `upstream exploded`),
	} {
		f := newFakeEndpoint(t, h)
		_, plainErr := routerFor(f, "").Complete(context.Background(), hello("test/m"))
		_, streamErr := routerFor(f, "").Complete(context.Background(), streamed("test/m", &recorder{}))
		if p, s := asError(t, plainErr), asError(t, streamErr); !reflect.DeepEqual(p, s) {
			t.Errorf("streamed error %+v, plain %+v", s, p)
		}
	}
}

// A server that ignores "stream" answers one completion: it still counts,
// its text as one delta.
func TestStreamIgnoredByServer(t *testing.T) {
	f := newFakeEndpoint(t, reply(200, completion("hi there", "stop")))
	rec := &recorder{}
	resp, err := routerFor(f, "").Complete(context.Background(), streamed("test/m", rec))
	if err != nil || resp.Text != "hi there" || resp.Usage.InputTokens != 11 {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if got := rec.got(); !reflect.DeepEqual(got, []string{"hi there"}) {
		t.Fatalf("deltas %q", got)
	}
}

// The client hands each delta over while the stream is still open: the
// server holds the rest back until OnText has seen the first.
func TestStreamDeliversIncrementally(t *testing.T) {
	seen := make(chan struct{})
	f := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, textChunk("first "))
		select {
		case <-seen:
		case <-time.After(5 * time.Second):
			t.Error("OnText did not get the first delta while the stream was open: the client buffers")
		}
		sse(w, textChunk("second"), chunk(map[string]any{}, "stop"), "[DONE]")
	})
	var once sync.Once
	rec := &recorder{}
	req := hello("test/m")
	req.OnText = func(d string) {
		rec.onText(d)
		once.Do(func() { close(seen) })
	}
	resp, err := routerFor(f, "").Complete(context.Background(), req)
	if err != nil || resp.Text != "first second" {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if got := rec.got(); !reflect.DeepEqual(got, []string{"first ", "second"}) {
		t.Fatalf("deltas %q", got)
	}
}

func streamRouter(f *fakeEndpoint, timeout time.Duration) *Router {
	return NewRouter(RouterOptions{Endpoints: map[string]Endpoint{"test": {BaseURL: f.URL + "/v1"}}, RequestTimeout: timeout})
}

// While streaming, the request timeout bounds silence, not the whole answer.
func TestStreamIdleTimeout(t *testing.T) {
	const timeout = time.Second // chunks every 100 ms: ten times the margin on a loaded machine

	t.Run("slow but steady", func(t *testing.T) {
		f := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
			for i := range 20 { // ~600ms in all, twice the timeout
				sse(w, textChunk(fmt.Sprint(i%10)))
				time.Sleep(timeout / 10)
			}
			sse(w, chunk(map[string]any{}, "stop"), "[DONE]")
		})
		start := time.Now()
		resp, err := streamRouter(f, timeout).Complete(context.Background(), streamed("test/m", &recorder{}))
		if err != nil || resp.Text != "01234567890123456789" {
			t.Fatalf("got %+v, %v", resp, err)
		}
		if d := time.Since(start); d < timeout {
			t.Fatalf("the stream took %v, not longer than the timeout: the test proves nothing", d)
		}
	})

	t.Run("stalled", func(t *testing.T) {
		f := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
			sse(w, textChunk("a"))
			select {
			case <-r.Context().Done():
			case <-time.After(10 * timeout):
			}
		})
		rec := &recorder{}
		_, err := streamRouter(f, timeout).Complete(context.Background(), streamed("test/m", rec))
		e := asError(t, err)
		if !e.Retryable || !strings.Contains(e.Message, "timed out") || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %+v", e)
		}
		if got := rec.got(); !reflect.DeepEqual(got, []string{"a"}) {
			t.Fatalf("deltas %q", got)
		}
	})

	t.Run("no headers", func(t *testing.T) {
		f := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		_, err := streamRouter(f, timeout).Complete(context.Background(), streamed("test/m", &recorder{}))
		if e := asError(t, err); !e.Retryable || !strings.Contains(e.Message, "timed out") {
			t.Fatalf("got %+v", e)
		}
	})
}

func TestStreamContextCancel(t *testing.T) {
	f := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, textChunk("a"))
		<-r.Context().Done() // never finishes on its own
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := hello("test/m")
	req.OnText = func(string) { cancel() }
	_, err := routerFor(f, "").Complete(ctx, req) // returns on cancel: the stream never ends on its own
	e := asError(t, err)
	if !errors.Is(err, context.Canceled) || !e.Retryable || !strings.Contains(e.Message, "abandoned") {
		t.Fatalf("got %+v", e)
	}
}

// A stream's answer is bounded by maxResponseBytes of what is kept
// (text, refusal, arguments), whatever its framing takes.
func TestStreamAnswerTooLarge(t *testing.T) {
	f := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := `data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 1<<16) + `"}}]}` + "\n\n"
		for range maxResponseBytes/(1<<16) + 2 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	_, err := routerFor(f, "").Complete(context.Background(), streamed("test/m", &recorder{}))
	if e := asError(t, err); e.Retryable || !strings.Contains(e.Message, "response larger than") {
		t.Fatalf("got %+v", e)
	}
}

// Framing that keeps nothing (comments here; in practice each delta's
// JSON envelope) is bounded by maxStreamBytes.
func TestStreamTooLarge(t *testing.T) {
	f := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		line := ": " + strings.Repeat("x", 1<<10) + "\n"
		for range maxStreamBytes/len(line) + 2 {
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
		}
	})
	_, err := routerFor(f, "").Complete(context.Background(), streamed("test/m", &recorder{}))
	if e := asError(t, err); e.Retryable || !strings.Contains(e.Message, "stream larger than") {
		t.Fatalf("got %+v", e)
	}
}
