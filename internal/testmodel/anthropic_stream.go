package testmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/agenttask/agenttask/internal/llm"
)

// A streamed Messages API answer: message_start, then per content block
// content_block_start, its deltas (text_delta or input_json_delta) and
// content_block_stop, then message_delta (stop_reason, usage) and
// message_stop. Reply.BreakAfter, BeforeChunk and the first-delta time
// count the deltas as the OpenAI stream does.

type sseEvent struct {
	name string
	data any
}

// anthropicEvents is the stream of a, split into its deltas; delta[i] is the
// index in events of delta i.
func anthropicEvents(c Call, r Reply, a anthropicAnswer) (events []sseEvent, delta []int) {
	start := map[string]any{"id": messageID(c), "type": "message", "role": "assistant", "model": c.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": a.usage(1)}
	events = append(events, sseEvent{"message_start", map[string]any{"type": "message_start", "message": start}})
	index := 0
	addDelta := func(d map[string]any) {
		delta = append(delta, len(events))
		events = append(events, sseEvent{"content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d}})
	}
	stop := func() {
		events = append(events, sseEvent{"content_block_stop", map[string]any{"type": "content_block_stop", "index": index}})
		index++
	}
	if a.text != "" {
		events = append(events, sseEvent{"content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}}})
		text := r.Chunks
		if len(text) == 0 || a.refusal != "" {
			text = llm.SplitWords(a.text)
		}
		for _, t := range text {
			addDelta(map[string]any{"type": "text_delta", "text": t})
		}
		stop()
	}
	for _, tc := range a.calls {
		events = append(events, sseEvent{"content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": map[string]any{}}}})
		for _, p := range pieces(string(toolArgs(tc.Function.Arguments)), argumentPiece) {
			addDelta(map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		stop()
	}
	events = append(events,
		sseEvent{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": a.stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": a.completion}}},
		sseEvent{"message_stop", map[string]any{"type": "message_stop"}})
	return events, delta
}

func (s *Server) writeAnthropicStream(w http.ResponseWriter, r *http.Request, c Call, rep Reply) {
	if rep.RetryAfter != "" {
		w.Header().Set("Retry-After", rep.RetryAfter)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(e sseEvent) bool {
		b, err := json.Marshal(e.data)
		if err != nil { // cannot happen: plain strings and numbers
			panic(err)
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	events, deltas := anthropicEvents(c, rep, prepareAnthropic(c, rep))
	next := 0 // the next delta's number
	for i, e := range events {
		if next < len(deltas) && deltas[next] == i {
			if rep.BreakAfter > 0 && next == rep.BreakAfter {
				panic(http.ErrAbortHandler)
			}
			if rep.BeforeChunk != nil && !s.beforeChunk(r, rep.BeforeChunk, next) {
				return
			}
			if next == 0 {
				s.mu.Lock()
				s.firstChunk[c.Seq] = time.Now()
				s.mu.Unlock()
			}
			next++
		} else if rep.BreakAfter > 0 && next >= rep.BreakAfter && e.name == "message_delta" {
			panic(http.ErrAbortHandler) // cut before the stop reason
		}
		if !send(e) {
			return
		}
	}
}
