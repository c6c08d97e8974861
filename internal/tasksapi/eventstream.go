package tasksapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/sse"
)

// eventStream is the answer serve writes: its events go through an
// sse.Sender (huma's for GET /v1/runs/{id}/events, sendEvent's for a
// streamed run); the comment lines that keep a quiet stream open, which a
// Sender cannot write, go to the body itself.
type eventStream struct {
	send sse.Sender
	w    io.Writer
	rc   *http.ResponseController
}

// openStream starts a stream's answer: 200 and its headers (huma's Sender
// sets only Content-Type). They reach the client with the first event or
// keep-alive. send nil: the stream writes its events itself (sendEvent).
func openStream(hctx huma.Context, send sse.Sender) *eventStream {
	hctx.SetHeader("Content-Type", "text/event-stream")
	hctx.SetHeader("Cache-Control", "no-cache")
	hctx.SetHeader("X-Accel-Buffering", "no") // proxies: do not buffer
	hctx.SetStatus(http.StatusOK)
	out := &eventStream{w: hctx.BodyWriter()}
	if rw, ok := out.w.(http.ResponseWriter); ok {
		out.rc = http.NewResponseController(rw)
	}
	out.send = send
	if send == nil {
		out.send = out.sendEvent
	}
	return out
}

// event sends one event; id 0 sends none (an event of this connection
// only, which a reconnect does not replay).
func (o *eventStream) event(id int64, e StreamEvent) error {
	return o.send(sse.Message{ID: int(id), Data: e})
}

// end lifts the write deadline the last write left: net/http writes the
// answer's end after the handler returns, maybe more than
// sse.WriteTimeout after the last event or keep-alive.
func (o *eventStream) end() {
	if o.rc != nil {
		_ = o.rc.SetWriteDeadline(time.Time{})
	}
}

func (o *eventStream) keepAlive() error { return o.write(": keep-alive\n\n") }

// sendEvent is the Sender of a streamed run, whose operation answers JSON
// or events (sse.Register's answer only events): it writes each event as
// huma's Sender does, `id:` (when above 0), `retry:` (likewise), then one
// `data:` line of JSON.
func (o *eventStream) sendEvent(m sse.Message) error {
	data, err := json.Marshal(m.Data)
	if err != nil {
		return err
	}
	var b strings.Builder
	if m.ID > 0 {
		fmt.Fprintf(&b, "id: %d\n", m.ID)
	}
	if m.Retry > 0 {
		fmt.Fprintf(&b, "retry: %d\n", m.Retry)
	}
	fmt.Fprintf(&b, "data: %s\n\n", data)
	return o.write(b.String())
}

// write writes s and flushes it. Like huma's Sender it gives each write
// sse.WriteTimeout: the deadline a Sender's event leaves must not fail a
// keep-alive written after it.
func (o *eventStream) write(s string) error {
	if o.rc != nil {
		_ = o.rc.SetWriteDeadline(time.Now().Add(sse.WriteTimeout))
	}
	if _, err := io.WriteString(o.w, s); err != nil {
		return err
	}
	if o.rc != nil {
		return o.rc.Flush()
	}
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}
