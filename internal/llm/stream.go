package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// Streaming: with Request.OnText set, the endpoint answers with server-sent
// events, one chat.completion.chunk per data line, ended by "data: [DONE]".
// openai-go's ssestream decodes them; readStream gathers the chunks into the
// same answer a plain completion gives, handing each piece of text to OnText
// as soon as it is read.

// errIdleTimeout cancels a streamed attempt that received no data for the
// client's timeout. It wraps DeadlineExceeded like the plain path's timeout.
var errIdleTimeout = fmt.Errorf("stream idle timeout: %w", context.DeadlineExceeded)

// idleTimer cancels an attempt after timeout without data: first while
// waiting for the response headers, then during each read of the body.
type idleTimer struct {
	timer   *time.Timer
	timeout time.Duration
}

func startIdleTimer(ctx context.Context, timeout time.Duration) (context.Context, *idleTimer, context.CancelFunc) {
	attemptCtx, cancel := context.WithCancelCause(ctx)
	t := &idleTimer{timer: time.AfterFunc(timeout, func() { cancel(errIdleTimeout) }), timeout: timeout}
	return attemptCtx, t, func() {
		t.timer.Stop()
		cancel(context.Canceled)
	}
}

// reader wraps a response body so the timer runs only while a Read waits:
// time the caller spends in OnText is not the endpoint's idleness.
func (t *idleTimer) reader(r io.Reader) io.Reader { return idleReader{r, t} }

type idleReader struct {
	r io.Reader
	t *idleTimer
}

func (ir idleReader) Read(p []byte) (int, error) {
	ir.t.timer.Reset(ir.t.timeout)
	n, err := ir.r.Read(p)
	ir.t.timer.Stop()
	return n, err
}

// isJSON reports a JSON body: a server that ignores "stream" sends one.
func isJSON(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// streamReader gathers one stream's chunks.
type streamReader struct {
	c      *endpointClient
	model  string // requested, for errors
	status int
	onText func(string)

	ans        answer
	sawChoice  bool
	text       strings.Builder
	refusal    strings.Builder
	args       [][]byte    // arguments so far, per entry of ans.toolCalls
	callsByIdx map[int]int // tool-call index -> entry of ans.toolCalls
}

func (c *endpointClient) readStream(ctx, attemptCtx context.Context, model string, status int, body io.ReadCloser, onText func(string)) (Response, error) {
	s := &streamReader{c: c, model: model, status: status, onText: onText, callsByIdx: map[int]int{}}
	tb := &terminatedBody{r: body}
	dec := &doneWatcher{Decoder: ssestream.NewDecoder(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: readCloser{tb, body}})}
	st := ssestream.NewStream[openai.ChatCompletionChunk](dec, nil)
	for st.Next() {
		if err := s.chunk(st.Current()); err != nil {
			st.Close()
			return Response{}, err
		}
	}
	err := st.Err()
	var se *ssestream.StreamError
	switch {
	case err == nil && dec.done:
		return s.result()
	case err == nil:
		return s.ended(ctx, attemptCtx, io.EOF)
	case errors.As(err, &se):
		// Some servers report a failure mid-stream as a chunk with an error
		// object: the request was accepted, so it is the server's failure
		// (overloaded, an upstream fault), which a retry may fix.
		return Response{}, c.errorf(model, true, status, nil, "error in stream: %s", endpointMessage(se.Event.Data))
	case errors.Is(err, errTooLarge):
		return Response{}, c.errorf(model, false, status, nil, "response larger than %d bytes", maxResponseBytes)
	case tb.err != nil && errors.Is(err, tb.err):
		return s.ended(ctx, attemptCtx, err)
	case tb.added && isSyntaxError(err):
		// The last event, unterminated, is half written: what a cut leaves.
		return s.ended(ctx, attemptCtx, io.EOF)
	default:
		return Response{}, c.errorf(model, false, status, nil, "malformed stream chunk: %v: %s", err, snippet(dec.Event().Data))
	}
}

func isSyntaxError(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se)
}

// doneWatcher tells a stream ended by [DONE] from one that just stopped:
// ssestream.Stream ends both without an error.
type doneWatcher struct {
	ssestream.Decoder
	done bool
}

func (d *doneWatcher) Next() bool {
	ok := d.Decoder.Next()
	if ok && strings.HasPrefix(string(d.Event().Data), "[DONE]") {
		d.done = true
	}
	return ok
}

// terminatedBody ends the body with a blank line when the server did not:
// ssestream drops a last event that lacks one, though it may be whole.
// err keeps the read error, to tell a broken stream from a malformed one.
type terminatedBody struct {
	r        io.Reader
	lineLen  int  // bytes of the current line but '\r'
	blank    bool // the last complete line was blank and nothing followed
	added    bool // the blank line at the end is ours
	tail     []byte
	finished bool
	err      error
}

func (t *terminatedBody) Read(p []byte) (int, error) {
	if t.finished {
		n := copy(p, t.tail)
		if t.tail = t.tail[n:]; n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
	n, err := t.r.Read(p)
	for _, b := range p[:n] {
		switch b {
		case '\n':
			t.blank, t.lineLen = t.lineLen == 0, 0
		case '\r':
		default:
			t.blank, t.lineLen = false, t.lineLen+1
		}
	}
	if err == io.EOF {
		t.finished = true
		if !t.blank {
			t.added, t.tail = true, []byte("\n\n")
		}
		if n == 0 {
			return t.Read(p)
		}
		return n, nil
	}
	if err != nil {
		t.err = err
	}
	return n, err
}

func (s *streamReader) chunk(ch openai.ChatCompletionChunk) error {
	if ch.Model != "" {
		s.ans.model = ch.Model
	}
	if ch.JSON.Usage.Valid() {
		s.ans.usage = &ch.Usage
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue // we ask for one choice, as the plain path reads choices[0]
		}
		s.sawChoice = true
		text, err := contentText(choice.Delta.JSON.Content)
		if err != nil {
			return s.c.errorf(s.model, false, s.status, nil, "malformed stream chunk: %v", err)
		}
		if text != "" {
			s.text.WriteString(text)
			s.onText(text)
		}
		if r := choice.Delta.Refusal; r != "" {
			s.refusal.WriteString(r)
			s.onText(r)
		}
		for _, f := range choice.Delta.ToolCalls {
			s.toolCall(int(f.Index), f.ID, f.Function.Name, f.Function.Arguments)
		}
		if f := choice.FinishReason; f != "" {
			s.ans.finish = f
		}
	}
	return nil
}

// toolCall adds a fragment to the call at its index: id and name come in
// the first fragment of an index, the arguments in pieces. A different id
// at an index already taken starts another call: some servers send each
// call whole and leave out the index.
func (s *streamReader) toolCall(index int, id, name, args string) {
	i, ok := s.callsByIdx[index]
	if ok && id != "" && s.ans.toolCalls[i].ID != "" && id != s.ans.toolCalls[i].ID {
		ok = false
	}
	if !ok {
		i = len(s.ans.toolCalls)
		s.callsByIdx[index] = i
		s.ans.toolCalls = append(s.ans.toolCalls, ToolCall{})
		s.args = append(s.args, nil)
	}
	if id != "" {
		s.ans.toolCalls[i].ID = id
	}
	if name != "" {
		s.ans.toolCalls[i].Name = name
	}
	s.args[i] = append(s.args[i], args...)
}

// result is the Response for a stream that ended properly.
func (s *streamReader) result() (Response, error) {
	if !s.sawChoice {
		return Response{}, s.c.errorf(s.model, false, s.status, nil, "malformed response: stream had no choices")
	}
	s.ans.text, s.ans.refusal = s.text.String(), s.refusal.String()
	for i := range s.ans.toolCalls {
		s.ans.toolCalls[i].Arguments = string(s.args[i])
	}
	return s.c.response(s.model, s.ans), nil
}

// ended classifies a stream that stopped before [DONE] with err (io.EOF
// when the server closed it).
func (s *streamReader) ended(ctx, attemptCtx context.Context, err error) (Response, error) {
	switch {
	case ctx.Err() != nil:
		// The caller gave up: abandoned, whatever had arrived.
		return Response{}, s.c.transportError(ctx, attemptCtx, s.model, err)
	case s.ans.finish != "":
		// The answer was complete; only [DONE] (perhaps with the usage) is missing.
		return s.result()
	case errors.Is(context.Cause(attemptCtx), errIdleTimeout):
		return Response{}, s.c.transportError(ctx, attemptCtx, s.model, err)
	case err == io.EOF:
		return Response{}, s.c.errorf(s.model, true, s.status, io.ErrUnexpectedEOF, "stream ended before the answer was complete")
	default:
		return Response{}, s.c.errorf(s.model, true, s.status, err, "stream ended before the answer was complete: %v", err)
	}
}
