// Package testmodel is a scripted model server for tests. It speaks
// OpenAI-compatible chat completions (/v1/chat/completions), Anthropic's
// Messages API (/v1/messages) and the Gemini API
// (/v1beta/models/{model}:generateContent and :streamGenerateContent), all
// answered from the same script, so a test scripts a conversation once and
// runs it on any protocol. It listens on real HTTP, so a worker in another
// process can reach it by URL while the test process scripts the answers and
// observes the calls.
package testmodel

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Message is one chat message as the client sent it. Content joins its text
// parts; Images holds the URLs of its image parts (often data: URLs), Files
// the file_data of its file parts.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	Images     []string   `json:"images,omitempty"`
	Files      []string   `json:"files,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a function call, in a reply or in an assistant message sent back.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Call is one request the server received.
type Call struct {
	Seq int // 1-based arrival order
	// Protocol is ProtocolOpenAI, ProtocolAnthropic or ProtocolGemini.
	Protocol    string
	Model       string
	Messages    []Message
	MaxTokens   int // max_tokens, or max_completion_tokens when that is what was sent
	Temperature *float64
	// JSONSchema is response_format.json_schema.schema, nil if absent.
	JSONSchema map[string]any
	// Tools names the functions offered, in order.
	Tools []string
	// Stream is the request's "stream": a normal answer then comes as
	// server-sent events. IncludeUsage is stream_options.include_usage: the
	// stream then ends with a usage chunk.
	Stream       bool
	IncludeUsage bool
	Header       http.Header
	Raw          []byte
	// Tokens is the server's estimate of the prompt (SetContextLimit).
	Tokens int
	// Refused: the server answered 400 context_length_exceeded, as the
	// estimate was over the limit SetContextLimit set.
	Refused bool
	// CacheBreakpoints counts the cache_control marks of an Anthropic
	// request; CachePrefixBytes is the length of its canonical prefix up to
	// the last one (cache.go).
	CacheBreakpoints int
	CachePrefixBytes int
	// CacheReadTokens and CacheWriteTokens are what the server reported as
	// read from and written to its simulated prompt cache.
	CacheReadTokens, CacheWriteTokens int

	// cache is the request's canonical prompt, for the cache simulation.
	cache cacheKey
}

// Reply is the scripted answer to one call.
type Reply struct {
	Text string
	// Chunks, when set, are the text's deltas in a streamed answer, and the
	// text is their concatenation (Text is ignored, streamed or not). When
	// empty, a streamed Text is split into word-sized deltas.
	Chunks []string
	// BeforeChunk, when set, is called before delta i (0-based) of a
	// streamed answer is written, outside any lock, so a test can block
	// until its client has seen delta i-1. The server stops waiting for it
	// when the client goes away or the server closes, but cannot stop the
	// func itself: it should select on a timeout too, or the test may leak it.
	// Deltas are the text's, then the refusal's words, then the tool-call
	// fragments (per call: id and name, then the arguments in pieces).
	BeforeChunk func(i int)
	// BreakAfter, when > 0, cuts a streamed answer's connection after that
	// many deltas (after the last one if there are fewer), before the
	// finish_reason, as a dropped connection would.
	BreakAfter int
	// ToolCalls, when set, answers with these calls (finish_reason "tool_calls" unless FinishReason says otherwise).
	ToolCalls []ToolCall
	// FinishReason defaults to "stop".
	FinishReason string
	// Refusal, when set, is sent as message.refusal (content is null unless Text is set).
	Refusal string
	// PromptTokens and CompletionTokens default to ~len/4 (at least 1).
	PromptTokens, CompletionTokens int
	// Status other than 0 or 200 answers {"error":{"message":ErrorMessage}} instead.
	Status       int
	ErrorMessage string
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// RawBody, when set, is sent verbatim instead of the generated JSON (to test malformed answers).
	RawBody string
	// Delay waits before answering; a client that gives up first counts in Cancelled.
	Delay time.Duration
}

// text is the answer's text, streamed or not.
func (r Reply) text() string {
	if len(r.Chunks) > 0 {
		return strings.Join(r.Chunks, "")
	}
	return r.Text
}

// Handler decides the answer to one call. It runs outside the server's lock,
// so it may call the Server's methods.
type Handler func(c Call) Reply

// Server is a running test model. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL including "/v1", ready for llm.Endpoint.BaseURL
	// of an OpenAI-compatible provider.
	URL string
	// Root is the server's URL without a path: the base URL of an Anthropic
	// or Gemini provider (their SDKs add "/v1/messages" and "/v1beta/...").
	Root string

	srv *httptest.Server

	mu         sync.Mutex
	handler    Handler
	calls      []Call
	firstChunk map[int]time.Time // by Seq: when the first delta was written
	cancelled  int
	held       chan struct{} // non-nil while held; closed by Release
	changed    chan struct{} // closed and replaced on every arrival or cancellation
	closed     chan struct{}
	closeOnce  sync.Once
	// contextLimit, when > 0, refuses longer requests (SetContextLimit).
	contextLimit int
	// cache is the simulated prompt cache (cache.go).
	cache promptCache
}

// Start starts a server answering with Echo. Stop it with Close.
func Start() *Server {
	s := &Server{handler: Echo, firstChunk: map[int]time.Time{}, changed: make(chan struct{}), closed: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	s.Root = s.srv.URL
	return s
}

// Close releases held and delayed requests and stops the server.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
	s.srv.Close()
}

// SetHandler replaces the handler for calls not yet answered; nil restores Echo.
func (s *Server) SetHandler(h Handler) {
	if h == nil {
		h = Echo
	}
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

// Calls returns every call received so far, in arrival order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallCount is len(Calls()) without the copy.
func (s *Server) CallCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// Hold makes requests block after they arrive, until Release or until the
// client abandons them. It lets a test keep a model turn open.
func (s *Server) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = make(chan struct{})
	}
}

// Release lets every held request proceed and stops holding new ones.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held != nil {
		close(s.held)
		s.held = nil
	}
}

// FirstChunkAt is when the first delta of call seq's streamed answer was
// written (taken just before the write), zero when none was. Against the
// time the client saw it, it measures the latency the client adds.
func (s *Server) FirstChunkAt(seq int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstChunk[seq]
}

// Cancelled counts requests the client abandoned while they were held,
// delayed or waiting for a BeforeChunk.
func (s *Server) Cancelled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled
}

// WaitForCalls blocks until at least n requests have arrived (held ones count).
func (s *Server) WaitForCalls(ctx context.Context, n int) error {
	return s.waitFor(ctx, func() bool { return len(s.calls) >= n }, fmt.Sprintf("%d calls", n))
}

// WaitForCancelled blocks until at least n requests have been abandoned by
// their client. The server notices a dropped connection asynchronously, so
// tests should wait rather than read Cancelled right after cancelling.
func (s *Server) WaitForCancelled(ctx context.Context, n int) error {
	return s.waitFor(ctx, func() bool { return s.cancelled >= n }, fmt.Sprintf("%d cancelled calls", n))
}

// waitFor blocks until cond (evaluated under the lock) holds.
func (s *Server) waitFor(ctx context.Context, cond func() bool, what string) error {
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("testmodel: waiting for %s: %w", what, ctx.Err())
		}
	}
}

// notifyLocked wakes waiters; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	proto, ok := route(r)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("testmodel: no route for %s %s", r.Method, r.URL.Path))
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return // client went away mid-body
	}
	call, err := proto.parse(raw, r)
	if err != nil {
		proto.writeError(w, http.StatusBadRequest, "testmodel: "+err.Error())
		return
	}
	call.Protocol = proto.name
	call.Header = r.Header.Clone()
	call.Tokens = promptTokens(call.Messages)

	s.mu.Lock()
	limit := s.contextLimit
	call.Refused = limit > 0 && call.Tokens > limit
	call.Seq = len(s.calls) + 1
	if !call.Refused {
		s.cache.lookup(&call)
	}
	s.calls = append(s.calls, call)
	held := s.held
	s.notifyLocked()
	s.mu.Unlock()

	if held != nil && !s.wait(w, r, held) {
		return
	}
	if call.Refused {
		proto.writeContextLength(w, limit, call.Tokens)
		return
	}
	// Read the handler only now, so a test may script the answer while the call is held.
	s.mu.Lock()
	handler := s.handler
	s.mu.Unlock()
	reply := handler(call)
	if reply.Delay > 0 {
		elapsed := make(chan struct{})
		t := time.AfterFunc(reply.Delay, func() { close(elapsed) })
		defer t.Stop()
		if !s.wait(w, r, elapsed) {
			return
		}
	}
	if call.Stream && (reply.Status == 0 || reply.Status == http.StatusOK) && reply.RawBody == "" {
		proto.writeStream(s, w, r, call, reply)
		return
	}
	proto.writeReply(w, call, reply)
}

// wait blocks until ch fires. It reports false when the client gave up (counted
// in Cancelled) or the server is closing (answered 503 so clients retry).
func (s *Server) wait(w http.ResponseWriter, r *http.Request, ch <-chan struct{}) bool {
	ok, closing := s.await(r, ch)
	if closing {
		writeError(w, http.StatusServiceUnavailable, "testmodel: server closed")
	}
	return ok
}

// await blocks until ch fires (ok), the client gives up (counted in
// Cancelled) or the server is closing.
func (s *Server) await(r *http.Request, ch <-chan struct{}) (ok, closing bool) {
	select {
	case <-ch:
		return true, false
	case <-r.Context().Done():
		s.mu.Lock()
		s.cancelled++
		s.notifyLocked()
		s.mu.Unlock()
		return false, false
	case <-s.closed:
		return false, true
	}
}
