package tasksapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/workflows"
)

// Streaming (seed 004, "Streaming a run"). Every run this API starts
// publishes its model text to the broker as it is written (StartArgs
// stream): the worker's model activity appends text events and one done or
// error per turn to the subject runs.<run ID>, numbered 1, 2, ... within the
// run. Nothing of it enters Temporal's history. This file relays those
// events as server-sent events: to POST /v1/tasks/{name}/run with
// "stream": true (the first turn, ending at its done or error) and to
// GET /v1/runs/{id}/events (every turn, from Last-Event-ID on, until an
// error or the run's end). The event's `id:` is its number, so a client that
// lost its connection resumes where it was.

const (
	// memoModel names the run's catalogue model, for units in done events.
	memoModel = "api_model"
	// DefaultKeepAlive spaces the comment lines that keep a quiet stream open.
	DefaultKeepAlive = 15 * time.Second
	// terminalGrace is how long a streamed run waits, once its answer came
	// through Temporal, for the worker's done or error; after it the API
	// writes that event itself (a worker without a broker, a lost publish).
	terminalGrace = 3 * time.Second
	// closedCheck is how often /events asks whether its run has ended.
	closedCheck = 2 * time.Second
	// followTimeout bounds starting to read a run's events: a broker that
	// is away gets an error event, not a silent wait.
	followTimeout = 10 * time.Second
)

// StreamEvent is the data of one server-sent event.
type StreamEvent struct {
	Type string `json:"type" enum:"text,done,error"`
	// text
	Text string `json:"text,omitempty" doc:"text: the next piece of the answer"`
	// done
	StopReason string          `json:"stopReason,omitempty" enum:"end,max_tokens,refused"`
	Usage      *RunUsage       `json:"usage,omitempty"`
	JSON       json.RawMessage `json:"json,omitempty" doc:"done, for a task with JSON answers: the answer parsed"`
	// Attempt marks the events of a model call that was tried again (2, 3, ...).
	Attempt int `json:"attempt,omitempty" doc:"From 2 on: the events of a model call tried again after its stream was interrupted"`
	// error: the problem document (its type URI gives way to "error")
	Title  string `json:"title,omitempty"`
	Status int    `json:"status,omitempty"`
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`
}

func errorEvent(p *Problem) StreamEvent {
	return StreamEvent{Type: broker.TypeError, Title: p.Title, Status: p.Status, Code: p.Code, Detail: p.Detail}
}

// sseWriter writes server-sent events, flushing each at once.
type sseWriter struct {
	mu sync.Mutex
	w  io.Writer
	rc *http.ResponseController
}

func newSSE(ctx huma.Context) *sseWriter {
	ctx.SetHeader("Content-Type", "text/event-stream")
	ctx.SetHeader("Cache-Control", "no-cache")
	ctx.SetHeader("X-Accel-Buffering", "no") // proxies: do not buffer
	ctx.SetStatus(http.StatusOK)
	w := ctx.BodyWriter()
	out := &sseWriter{w: w}
	if rw, ok := w.(http.ResponseWriter); ok {
		out.rc = http.NewResponseController(rw)
	}
	return out
}

// event writes one event; id 0 writes none (an event of this connection
// only, which a reconnect does not replay).
func (o *sseWriter) event(id int64, e StreamEvent) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	var b strings.Builder
	if id > 0 {
		fmt.Fprintf(&b, "id: %d\n", id)
	}
	fmt.Fprintf(&b, "data: %s\n\n", data)
	return o.write(b.String())
}

func (o *sseWriter) keepAlive() error { return o.write(": keep-alive\n\n") }

func (o *sseWriter) write(s string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
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

// askOutcome is how a streamed run's ask update ended.
type askOutcome struct {
	res workflows.AskResult
	err error
}

// relay is one stream of a run's events.
type relay struct {
	runID, model string
	json         bool // the task answers in JSON
	after        int64
	// firstTurn ends the stream at the first done (a run's own answer).
	firstTurn bool
	// answered, for a run this request started, brings the ask's outcome:
	// the API writes the terminal event from it if the worker's never comes.
	answered <-chan askOutcome
	// untilClosed ends the stream once the run has ended (/events).
	untilClosed bool
}

// serve writes the run's events after r.after until the stream ends: an
// error, the first done (firstTurn), the run's end (untilClosed), ctx.
func (s *server) serve(ctx context.Context, out *sseWriter, r relay) {
	fctx, cancel := context.WithTimeout(ctx, followTimeout)
	f, err := s.cfg.Broker.Follow(fctx, r.runID, r.after)
	cancel()
	if err != nil {
		_ = out.event(0, errorEvent(problem(CodeInternal, "reading the run's events: "+err.Error(), "")))
		return
	}
	defer f.Close()
	events, failed := make(chan broker.Event), make(chan error, 1)
	go func() {
		for {
			e, err := f.Next(ctx)
			if err != nil {
				failed <- err
				return
			}
			select {
			case events <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	keep := time.NewTicker(s.cfg.KeepAlive)
	defer keep.Stop()
	var check <-chan time.Time
	if r.untilClosed {
		t := time.NewTicker(closedCheck)
		defer t.Stop()
		check = t.C
	}
	var grace, drained <-chan time.Time
	var outcome askOutcome
	var relayed strings.Builder // the text sent since the last error: is it the whole answer?
	for {
		select {
		case e := <-events:
			switch e.Type {
			case broker.TypeText:
				relayed.WriteString(e.Text)
			case broker.TypeError:
				relayed.Reset()
			}
			if out.event(e.ID, s.streamEvent(r, e)) != nil {
				return // the client went away
			}
			if e.Type == broker.TypeError || (r.firstTurn && e.Type == broker.TypeDone) {
				return
			}
		case <-keep.C:
			if out.keepAlive() != nil {
				return
			}
		case outcome = <-r.answered:
			r.answered, grace = nil, time.After(terminalGrace)
		case <-grace:
			grace = nil
			for _, e := range s.terminalOf(outcome, r.json, relayed.String()) {
				// Appended, it arrives through f, in order. When the broker
				// is away, this connection still gets the rest, without ids.
				if _, err := s.cfg.Broker.Append(ctx, r.runID, e); err != nil {
					_ = out.event(0, s.streamEvent(r, e))
					if e.Type != broker.TypeText {
						return
					}
				}
			}
		case <-check:
			if drained == nil && s.runEnded(ctx, r.runID) {
				drained = time.After(time.Second) // events published before the end are read by then
			}
		case <-drained:
			return
		case err := <-failed:
			if ctx.Err() == nil {
				_ = out.event(0, errorEvent(problem(CodeInternal, "reading the run's events: "+err.Error(), "")))
				return
			}
			s.timedOut(ctx, out, r)
			return
		case <-ctx.Done():
			s.timedOut(ctx, out, r)
			return
		}
	}
}

// timedOut ends a run's own stream that outlived AGENT_API_RUN_TIMEOUT.
func (s *server) timedOut(ctx context.Context, out *sseWriter, r relay) {
	if r.firstTurn && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		_ = out.event(0, errorEvent(problem(CodeRunTimeout, fmt.Sprintf("run %s did not answer within %s; it goes on: read its answer with GET /v1/runs/%s/messages or GET /v1/runs/%s/events", r.runID, s.cfg.RunTimeout, r.runID, r.runID), "")))
	}
}

// streamEvent is what a client reads of a broker event.
func (s *server) streamEvent(r relay, e broker.Event) StreamEvent {
	out := StreamEvent{Type: e.Type}
	if e.Attempt > 1 {
		out.Attempt = e.Attempt
	}
	switch e.Type {
	case broker.TypeText:
		out.Text = e.Text
	case broker.TypeDone:
		out.StopReason = e.StopReason
		if out.StopReason == "" {
			out.StopReason = "end"
		}
		u := RunUsage{}
		if e.Usage != nil {
			u.InputTokens, u.OutputTokens = e.Usage.InputTokens, e.Usage.OutputTokens
		}
		if m, ok := s.cfg.Catalog.Get(r.model); ok {
			u.Units = m.Units(int64(u.InputTokens), int64(u.OutputTokens))
		}
		out.Usage, out.JSON = &u, e.JSON
	default:
		var p *Problem
		if e.Code == broker.CodeStreamInterrupted {
			p = problem(CodeStreamInterrupted, fmt.Sprintf("run %s: %s. Read the answer with GET /v1/runs/%s/messages, or reconnect to GET /v1/runs/%s/events with Last-Event-ID: %d",
				r.runID, e.Message, r.runID, r.runID, e.ID), "")
		} else {
			p = problemOfType(e.Code, e.Message)
		}
		out = StreamEvent{Type: broker.TypeError, Attempt: out.Attempt, Title: p.Title, Status: p.Status, Code: p.Code, Detail: p.Detail}
	}
	return out
}

// terminalOf ends a turn whose worker published no end (a worker without
// a broker, or whose publishing broke off), from the ask's outcome: its
// error; or the answer's text not yet sent, then done. Text sent that is
// not the start of the answer ends the stream as interrupted instead. The
// API's own events have turn 0 (no worker attempt is stale behind them).
func (s *server) terminalOf(o askOutcome, answersJSON bool, relayed string) []broker.Event {
	if o.err != nil {
		typ, msg := errorTypeOf(o.err)
		return []broker.Event{{Type: broker.TypeError, Code: typ, Message: msg}}
	}
	answer := contract.TextOf(o.res.Output)
	rest, ok := strings.CutPrefix(answer, relayed)
	if !ok {
		return []broker.Event{{Type: broker.TypeError, Code: broker.CodeStreamInterrupted,
			Message: "the text sent is not the answer's"}}
	}
	var out []broker.Event
	if rest != "" {
		out = append(out, broker.Event{Type: broker.TypeText, Text: rest})
	}
	e := broker.Event{Type: broker.TypeDone, StopReason: o.res.Turn.StopReason,
		Usage: &broker.Usage{InputTokens: o.res.Turn.Usage.InputTokens, OutputTokens: o.res.Turn.Usage.OutputTokens}}
	if t := strings.TrimSpace(contract.TextOf(o.res.Output)); answersJSON && json.Valid([]byte(t)) {
		e.JSON = json.RawMessage(t)
	}
	return append(out, e)
}

// runEnded reports whether a run is no longer running.
func (s *server) runEnded(ctx context.Context, id string) bool {
	d, err := s.cfg.Store.C.DescribeWorkflowExecution(ctx, id, "")
	return err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}
