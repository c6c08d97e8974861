package testmodel

import (
	"encoding/json"
	"fmt"
	"github.com/agenttask/agenttask/internal/llm"
	"net/http"
	"time"
)

// A streamed answer, as OpenAI sends one: chat.completion.chunk events, one
// per delta, then one with the finish_reason, then (when asked for) one with
// the usage and no choices, then "data: [DONE]".

type chunkDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	Refusal   *string         `json:"refusal,omitempty"`
	ToolCalls []toolCallDelta `json:"tool_calls,omitempty"`
}

// toolCallDelta is a fragment of a tool call: the first of an index carries
// its id and name, the others pieces of its arguments.
type toolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"` // null until the last choice chunk
}

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage,omitempty"`
}

// argumentPiece is the size, in runes, of a tool call's argument fragments.
const argumentPiece = 8

// deltas is a reply's stream: the text's deltas, the refusal's words, then
// the tool calls' fragments.
func deltas(r Reply, a answer) []chunkDelta {
	var out []chunkDelta
	text := r.Chunks
	if len(text) == 0 {
		text = llm.SplitWords(a.text)
	}
	for _, t := range text {
		out = append(out, chunkDelta{Content: &t})
	}
	for _, t := range llm.SplitWords(a.refusal) {
		out = append(out, chunkDelta{Refusal: &t})
	}
	for i, tc := range a.calls {
		first := toolCallDelta{Index: i, ID: tc.ID, Type: tc.Type}
		first.Function.Name = tc.Function.Name
		out = append(out, chunkDelta{ToolCalls: []toolCallDelta{first}})
		for _, p := range pieces(tc.Function.Arguments, argumentPiece) {
			frag := toolCallDelta{Index: i}
			frag.Function.Arguments = p
			out = append(out, chunkDelta{ToolCalls: []toolCallDelta{frag}})
		}
	}
	return out
}

// writeStream answers a streamed call with a normal reply, flushing every
// chunk so the client can read it at once.
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, c Call, rep Reply) {
	if rep.RetryAfter != "" {
		w.Header().Set("Retry-After", rep.RetryAfter)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	created := time.Now().Unix()
	send := func(choices []chunkChoice, u *usage) bool {
		b, err := json.Marshal(chunk{ID: completionID(c), Object: "chat.completion.chunk", Created: created, Model: c.Model, Choices: choices, Usage: u})
		if err != nil { // cannot happen: plain strings and numbers
			panic(err)
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false // the client went away
		}
		return rc.Flush() == nil
	}

	a := prepare(c, rep)
	ds := deltas(rep, a)
	if len(ds) == 0 {
		// Nothing to say: OpenAI still opens with the role.
		empty := ""
		if !send([]chunkChoice{{Delta: chunkDelta{Role: "assistant", Content: &empty}}}, nil) {
			return
		}
	}
	for i, d := range ds {
		if rep.BreakAfter > 0 && i == rep.BreakAfter {
			panic(http.ErrAbortHandler) // drops the connection mid-response
		}
		if rep.BeforeChunk != nil && !s.beforeChunk(r, rep.BeforeChunk, i) {
			return // the client or the server is gone; a cut stream either way
		}
		if i == 0 {
			d.Role = "assistant"
			s.mu.Lock()
			s.firstChunk[c.Seq] = time.Now()
			s.mu.Unlock()
		}
		if !send([]chunkChoice{{Delta: d}}, nil) {
			return
		}
	}
	if rep.BreakAfter > 0 {
		panic(http.ErrAbortHandler)
	}
	if !send([]chunkChoice{{FinishReason: &a.finish}}, nil) {
		return
	}
	if c.IncludeUsage {
		u := a.usage()
		if !send([]chunkChoice{}, &u) {
			return
		}
	}
	if _, err := fmt.Fprint(w, "data: [DONE]\n\n"); err == nil {
		_ = rc.Flush()
	}
}

// beforeChunk runs f(i) and waits for it to return, unless the client gives
// up (counted in Cancelled) or the server closes first: then it reports
// false and leaves f running, so a stuck f cannot block Close.
func (s *Server) beforeChunk(r *http.Request, f func(int), i int) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(i)
	}()
	ok, _ := s.await(r, done)
	return ok
}

// pieces splits s into pieces of at most n runes: never inside a rune,
// which JSON encoding would mangle.
func pieces(s string, n int) []string {
	var out []string
	start, count := 0, 0
	for i := range s { // i is where each rune starts
		if count == n {
			out = append(out, s[start:i])
			start, count = i, 0
		}
		count++
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
