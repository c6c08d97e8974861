package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenttask/agenttask/contract"
)

// fakeEndpoint is an httptest server that records requests and answers with fn.
type fakeEndpoint struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
	bodies  []map[string]any
}

func newFakeEndpoint(t *testing.T, fn http.HandlerFunc) *fakeEndpoint {
	t.Helper()
	f := &fakeEndpoint{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.headers = append(f.headers, r.Header.Clone())
		f.bodies = append(f.bodies, body)
		f.mu.Unlock()
		fn(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeEndpoint) lastBody(t *testing.T) map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		t.Fatal("endpoint received no request")
	}
	return f.bodies[len(f.bodies)-1]
}

func (f *fakeEndpoint) lastHeader(t *testing.T) http.Header {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.headers) == 0 {
		t.Fatal("endpoint received no request")
	}
	return f.headers[len(f.headers)-1]
}

// reply answers a fixed status and body.
func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func completion(content, finish string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test-2024",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
	})
	return string(b)
}

func routerFor(f *fakeEndpoint, key string) *Router {
	return NewRouter(RouterOptions{Endpoints: map[string]Endpoint{"test": {BaseURL: f.URL + "/v1/", APIKey: key}}})
}

func hello(model string) Request {
	return Request{Model: model, Messages: []Message{{Role: RoleUser, Content: "hello"}}}
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not *llm.Error", err, err)
	}
	return e
}

func TestCompleteSuccess(t *testing.T) {
	f := newFakeEndpoint(t, reply(200, completion("hi there", "stop")))
	resp, err := routerFor(f, "").Complete(context.Background(), hello("test/gpt-test"))
	if err != nil {
		t.Fatal(err)
	}
	want := Response{Text: "hi there", StopReason: StopEnd, Usage: contract.Usage{InputTokens: 11, OutputTokens: 7}, Model: "gpt-test-2024", Provider: "test"}
	if !reflect.DeepEqual(resp, want) {
		t.Fatalf("got %+v, want %+v", resp, want)
	}
}

func TestFinishReasonMapping(t *testing.T) {
	cases := map[string]StopReason{
		"stop": StopEnd, "tool_calls": StopEnd, "function_call": StopEnd, "": StopEnd, "eos": StopEnd,
		"length": StopMaxTokens, "content_filter": StopRefused,
	}
	for finish, want := range cases {
		t.Run(finish, func(t *testing.T) {
			f := newFakeEndpoint(t, reply(200, completion("x", finish)))
			resp, err := routerFor(f, "").Complete(context.Background(), hello("test/m"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StopReason != want {
				t.Fatalf("finish_reason %q: got %q, want %q", finish, resp.StopReason, want)
			}
		})
	}
	// A null finish_reason is an ordinary end too.
	f := newFakeEndpoint(t, reply(200, `{"choices":[{"message":{"role":"assistant","content":"x"},"finish_reason":null}]}`))
	resp, err := routerFor(f, "").Complete(context.Background(), hello("test/m"))
	if err != nil || resp.StopReason != StopEnd {
		t.Fatalf("null finish_reason: %+v, %v", resp, err)
	}
}

func TestRefusal(t *testing.T) {
	f := newFakeEndpoint(t, reply(200, `{"model":"m","choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`))
	resp, err := routerFor(f, "").Complete(context.Background(), hello("test/m"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "I can't help with that." || resp.StopReason != StopRefused {
		t.Fatalf("got %+v", resp)
	}
}

func TestUsageAbsentAndModelFallback(t *testing.T) {
	f := newFakeEndpoint(t, reply(200, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`))
	resp, err := routerFor(f, "").Complete(context.Background(), hello("test/vendor/model-x"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage != (contract.Usage{}) {
		t.Fatalf("usage = %+v, want zeros", resp.Usage)
	}
	if resp.Model != "vendor/model-x" {
		t.Fatalf("model = %q, want the requested name without provider", resp.Model)
	}
}

func TestContentParts(t *testing.T) {
	f := newFakeEndpoint(t, reply(200, `{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]},"finish_reason":"stop"}]}`))
	resp, err := routerFor(f, "").Complete(context.Background(), hello("test/m"))
	if err != nil || resp.Text != "ab" {
		t.Fatalf("got %+v, %v", resp, err)
	}
}

func TestRateLimitedIsRetryableWithRetryAfter(t *testing.T) {
	f := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		reply(429, `{"error":{"message":"Rate limit reached for gpt-test","type":"requests"}}`)(w, r)
	})
	_, err := routerFor(f, "").Complete(context.Background(), hello("test/m"))
	e := asError(t, err)
	if !e.Retryable || e.StatusCode != 429 || e.RetryAfter != 7*time.Second {
		t.Fatalf("got %+v", e)
	}
	if !strings.Contains(e.Message, "Rate limit reached for gpt-test") || !strings.Contains(e.Message, "test") || !strings.Contains(e.Message, "429") {
		t.Fatalf("message lacks endpoint message, provider or status: %q", e.Message)
	}
}

func TestRetryAfterMsPreferred(t *testing.T) {
	f := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		w.Header().Set("Retry-After-Ms", "1500")
		reply(429, `{}`)(w, r)
	})
	_, err := routerFor(f, "").Complete(context.Background(), hello("test/m"))
	if e := asError(t, err); e.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("RetryAfter = %v", e.RetryAfter)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"0":                             0,
		"-5":                            0,
		"0.5":                           500 * time.Millisecond,
		"garbage":                       0,
		"Wed, 01 Jan 2025 12:00:30 GMT": 30 * time.Second,
		"Wed, 01 Jan 2025 11:00:00 GMT": 0, // in the past
	}
	for in, want := range cases {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestServerErrorsAreRetryable(t *testing.T) {
	for _, status := range []int{500, 502, 503, 408} {
		f := newFakeEndpoint(t, reply(status, `upstream exploded`))
		_, err := routerFor(f, "").Complete(context.Background(), hello("test/m"))
		e := asError(t, err)
		if !e.Retryable || e.StatusCode != status || e.RetryAfter != 0 {
			t.Errorf("status %d: got %+v", status, e)
		}
		if !strings.Contains(e.Message, "upstream exploded") {
			t.Errorf("status %d: message %q lacks the body text", status, e.Message)
		}
	}
}

func TestClientErrorsAreNotRetryable(t *testing.T) {
	const key = "sk-secret-123"
	bodies := map[int]string{
		400: `{"error":{"message":"Invalid value for 'max_tokens': must be positive","type":"invalid_request_error"}}`,
		404: `{"error":"model not found"}`,
		422: `[{"error":{"message":"schema unsupported"}}]`,
	}
	wantMsg := map[int]string{400: "Invalid value for 'max_tokens': must be positive", 404: "model not found", 422: "schema unsupported"}
	for status, body := range bodies {
		f := newFakeEndpoint(t, reply(status, body))
		_, err := routerFor(f, key).Complete(context.Background(), hello("test/m"))
		e := asError(t, err)
		if e.Retryable || e.StatusCode != status {
			t.Errorf("status %d: got %+v", status, e)
		}
		if !strings.Contains(e.Message, wantMsg[status]) {
			t.Errorf("status %d: message %q lacks %q", status, e.Message, wantMsg[status])
		}
		if strings.Contains(e.Error(), key) {
			t.Errorf("status %d: message leaks the API key: %q", status, e.Error())
		}
	}
}

// Credentials and a too-long request are fixed while a task waits (keys
// rotated, the window shrunk), so they are retried; the key never leaks.
func TestAuthAndContextLengthErrorsAreRetryable(t *testing.T) {
	const key = "sk-secret-123"
	cases := []struct {
		status  int
		body    string
		long    bool
		wantMsg string
	}{
		{401, `{"error":{"message":"Incorrect API key provided: sk-secret-123"}}`, false, "Incorrect API key provided"},
		{403, `{"error":{"message":"project suspended"}}`, false, "project suspended"},
		{400, `{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}`, true, "maximum context length"},
	}
	for _, c := range cases {
		f := newFakeEndpoint(t, reply(c.status, c.body))
		_, err := routerFor(f, key).Complete(context.Background(), hello("test/m"))
		e := asError(t, err)
		if !e.Retryable || e.StatusCode != c.status || e.ContextLength != c.long {
			t.Errorf("status %d: got %+v", c.status, e)
		}
		if !strings.Contains(e.Message, c.wantMsg) || strings.Contains(e.Error(), key) {
			t.Errorf("status %d: message %q", c.status, e.Message)
		}
	}
}

func TestMalformedSuccessIsNotRetryable(t *testing.T) {
	for name, body := range map[string]string{
		"not json":     `<html>gateway</html>`,
		"truncated":    `{"choices":[{"message":`,
		"no choices":   `{"choices":[]}`,
		"error in 200": `{"error":{"message":"upstream failed"}}`,
		"bad content":  `{"choices":[{"message":{"content":42}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeEndpoint(t, reply(200, body))
			_, err := routerFor(f, "").Complete(context.Background(), hello("test/m"))
			e := asError(t, err)
			if e.Retryable || e.StatusCode != 200 {
				t.Fatalf("got %+v", e)
			}
		})
	}
}

func TestContextCancelAbortsPromptly(t *testing.T) {
	arrived := make(chan struct{})
	f := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done() // never answers on its own
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()

	_, err := routerFor(f, "").Complete(ctx, hello("test/m")) // returns on cancel: the server never answers
	e := asError(t, err)
	if !errors.Is(err, context.Canceled) || e.StatusCode != 0 {
		t.Fatalf("got %+v (errors.Is Canceled = %v)", e, errors.Is(err, context.Canceled))
	}
}

func TestRequestTimeoutIsRetryable(t *testing.T) {
	f := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	r := NewRouter(RouterOptions{
		Endpoints:      map[string]Endpoint{"test": {BaseURL: f.URL + "/v1"}},
		RequestTimeout: 50 * time.Millisecond,
	})
	_, err := r.Complete(context.Background(), hello("test/m"))
	e := asError(t, err)
	if !e.Retryable || !strings.Contains(e.Message, "timed out") {
		t.Fatalf("got %+v", e)
	}
}

func TestConnectionErrorIsRetryable(t *testing.T) {
	f := newFakeEndpoint(t, reply(200, "{}"))
	url := f.URL
	f.Close() // nothing listens there any more
	r := NewRouter(RouterOptions{Endpoints: map[string]Endpoint{"test": {BaseURL: url + "/v1", APIKey: "sk-k"}}})
	_, err := r.Complete(context.Background(), hello("test/m"))
	e := asError(t, err)
	if !e.Retryable || e.StatusCode != 0 || strings.Contains(e.Message, "sk-k") {
		t.Fatalf("got %+v", e)
	}
}

func TestAPIKeyHeader(t *testing.T) {
	f := newFakeEndpoint(t, reply(200, completion("x", "stop")))
	if _, err := routerFor(f, "sk-abc").Complete(context.Background(), hello("test/m")); err != nil {
		t.Fatal(err)
	}
	if got := f.lastHeader(t).Get("Authorization"); got != "Bearer sk-abc" {
		t.Fatalf("Authorization = %q", got)
	}
	if _, err := routerFor(f, "").Complete(context.Background(), hello("test/m")); err != nil {
		t.Fatal(err)
	}
	if got, ok := f.lastHeader(t)["Authorization"]; ok {
		t.Fatalf("Authorization sent without a key: %q", got)
	}
}

func TestRequestBody(t *testing.T) {
	f := newFakeEndpoint(t, reply(200, completion("{}", "stop")))
	temp := 0.25
	req := Request{
		Model:       "test/org/model-1",
		Messages:    []Message{{Role: RoleSystem, Content: "be brief"}, {Role: RoleUser, Content: "hi"}},
		MaxTokens:   321,
		Temperature: &temp,
		JSONSchema:  map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}},
		SchemaName:  "turn output",
	}
	if _, err := routerFor(f, "").Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(f.lastBody(t))
	want := `{"max_tokens":321,"messages":[{"content":"be brief","role":"system"},{"content":"hi","role":"user"}],"model":"org/model-1",` +
		`"response_format":{"json_schema":{"name":"turn_output","schema":{"properties":{"message":{"type":"string"}},"type":"object"},"strict":false},"type":"json_schema"},` +
		`"stream":false,"temperature":0.25}`
	if string(got) != want {
		t.Fatalf("body\n got %s\nwant %s", got, want)
	}
	if ct := f.lastHeader(t).Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}

	// Zero values are omitted; a nil schema sends no response_format; default schema name.
	if _, err := routerFor(f, "").Complete(context.Background(), hello("test/m")); err != nil {
		t.Fatal(err)
	}
	body := f.lastBody(t)
	for _, k := range []string{"max_tokens", "max_completion_tokens", "temperature", "response_format"} {
		if _, ok := body[k]; ok {
			t.Errorf("%s sent although unset: %v", k, body)
		}
	}
	if _, err := routerFor(f, "").Complete(context.Background(), Request{Model: "test/m", Messages: req.Messages, JSONSchema: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	rf := f.lastBody(t)["response_format"].(map[string]any)["json_schema"].(map[string]any)
	if rf["name"] != "output" {
		t.Fatalf("default schema name = %v", rf["name"])
	}
}

func TestEncodeFailureIsNotRetryable(t *testing.T) {
	f := newFakeEndpoint(t, reply(200, completion("x", "stop")))
	req := hello("test/m")
	req.JSONSchema = map[string]any{"bad": func() {}}
	_, err := routerFor(f, "").Complete(context.Background(), req)
	if e := asError(t, err); e.Retryable {
		t.Fatalf("got %+v", e)
	}
}

func TestInvalidBaseURLIsNotRetryable(t *testing.T) {
	r := NewRouter(RouterOptions{Endpoints: map[string]Endpoint{"test": {BaseURL: "http://user:hunter2@[::1"}}})
	_, err := r.Complete(context.Background(), hello("test/m"))
	e := asError(t, err)
	if e.Retryable || strings.Contains(e.Message, "hunter2") {
		t.Fatalf("got %+v", e)
	}
}
