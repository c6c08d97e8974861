package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// Streaming: with Request.OnText set, the endpoint answers with server-sent
// events, one chat.completion.chunk per data line, ended by "data: [DONE]".
// readStream gathers the chunks into the same answer a plain completion
// gives, handing each piece of text to OnText as soon as it is read.

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

// chatChunk is one streamed event.
type chatChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   json.RawMessage     `json:"content"`
			Refusal   string              `json:"refusal"`
			ToolCalls []wireToolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"` // in a last chunk with no choices, when asked for
	Error json.RawMessage `json:"error"`
}

// wireToolCallDelta is a fragment of a tool call: id and name come in the
// first fragment of an index, the arguments in pieces.
type wireToolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
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
	kept       int         // bytes of text, refusal and arguments so far
}

// maxStreamBytes bounds the bytes of a stream read: its framing (an
// event's JSON around each delta, often larger than the delta) is not
// kept, so it may take many times the answer's own bytes, which
// maxResponseBytes bounds. A tool call's arguments arrive a few
// characters an event, so 3 MB of them are some 100 MB of stream.
const maxStreamBytes = 16 * maxResponseBytes

func (c *endpointClient) readStream(ctx, attemptCtx context.Context, model string, status int, body io.Reader, onText func(string)) (Response, error) {
	s := &streamReader{c: c, model: model, status: status, onText: onText, callsByIdx: map[int]int{}}
	limited := &io.LimitedReader{R: body, N: maxStreamBytes + 1}
	br := bufio.NewReader(limited)

	// An event is its data lines joined by "\n", dispatched at a blank line.
	var data []byte
	hasData := false
	for {
		line, err := br.ReadBytes('\n')
		if limited.N <= 0 {
			return Response{}, c.errorf(model, false, status, nil, "stream larger than %d bytes", maxStreamBytes)
		}
		if s.kept > maxResponseBytes {
			return Response{}, c.errorf(model, false, status, nil, "response larger than %d bytes", maxResponseBytes)
		}
		if err == io.EOF {
			// The last event may lack its blank line (or even its newline).
			// Take it if it is whole; a partial one is what a cut leaves.
			s.field(line, &data, &hasData)
			if hasData && (isDone(data) || json.Valid(data)) {
				done, err := s.event(data)
				if err != nil {
					return Response{}, err
				}
				if done {
					return s.result()
				}
			}
		}
		if err != nil {
			return s.ended(ctx, attemptCtx, err)
		}
		if line = bytes.TrimRight(line, "\r\n"); len(line) > 0 {
			s.field(line, &data, &hasData)
			continue
		}
		if !hasData {
			continue // a blank line after comments only
		}
		done, err := s.event(data)
		if err != nil {
			return Response{}, err
		}
		if done {
			return s.result()
		}
		data, hasData = data[:0], false
	}
}

// field reads one line of an event; only data fields matter ("event:",
// "id:", "retry:" and ":" comments are skipped).
func (s *streamReader) field(line []byte, data *[]byte, hasData *bool) {
	name, value, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(":"))
	if string(name) != "data" {
		return
	}
	value = bytes.TrimPrefix(value, []byte(" "))
	if *hasData {
		*data = append(*data, '\n')
	}
	*data = append(*data, value...)
	*hasData = true
}

// event handles one event's data; done is true at [DONE].
func (s *streamReader) event(data []byte) (done bool, err error) {
	if isDone(data) {
		return true, nil
	}
	return false, s.chunk(data)
}

func isDone(data []byte) bool { return string(bytes.TrimSpace(data)) == "[DONE]" }

func (s *streamReader) chunk(data []byte) error {
	var ch chatChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return s.c.errorf(s.model, false, s.status, nil, "malformed stream chunk: %v: %s", err, snippet(data))
	}
	// Some servers report a failure mid-stream as a chunk with an error
	// object: the request was accepted, so it is the server's failure
	// (overloaded, an upstream fault), which a retry may fix.
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		return s.c.errorf(s.model, true, s.status, nil, "error in stream: %s", endpointMessage(data))
	}
	if ch.Model != "" {
		s.ans.model = ch.Model
	}
	if ch.Usage != nil {
		s.ans.usage = ch.Usage
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue // we ask for one choice, as the plain path reads choices[0]
		}
		s.sawChoice = true
		text, err := contentText(choice.Delta.Content)
		if err != nil {
			return s.c.errorf(s.model, false, s.status, nil, "malformed stream chunk: %v", err)
		}
		if text != "" {
			s.text.WriteString(text)
			s.kept += len(text)
			s.onText(text)
		}
		if r := choice.Delta.Refusal; r != "" {
			s.refusal.WriteString(r)
			s.kept += len(r)
			s.onText(r)
		}
		for _, f := range choice.Delta.ToolCalls {
			s.toolCall(f)
		}
		if f := choice.FinishReason; f != nil && *f != "" {
			s.ans.finish = *f
		}
	}
	return nil
}

// toolCall adds a fragment to the call at its index. A different id at an
// index already taken starts another call: some servers send each call whole
// and leave out the index.
func (s *streamReader) toolCall(f wireToolCallDelta) {
	i, ok := s.callsByIdx[f.Index]
	if ok && f.ID != "" && s.ans.toolCalls[i].ID != "" && f.ID != s.ans.toolCalls[i].ID {
		ok = false
	}
	if !ok {
		i = len(s.ans.toolCalls)
		s.callsByIdx[f.Index] = i
		s.ans.toolCalls = append(s.ans.toolCalls, ToolCall{})
		s.args = append(s.args, nil)
	}
	if f.ID != "" {
		s.ans.toolCalls[i].ID = f.ID
	}
	if f.Function.Name != "" {
		s.ans.toolCalls[i].Name = f.Function.Name
	}
	s.args[i] = append(s.args[i], f.Function.Arguments...)
	s.kept += len(f.Function.Arguments)
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
