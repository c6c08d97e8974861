package tasksapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
)

// Streaming (docs/streaming.md, docs/tasks-api.md#streaming). Every run this
// API starts publishes its model text to the broker as it is written
// (StartArgs stream): the worker's model activity appends text events and
// one done or error per turn to the subject runs.<run ID>. Nothing of it
// enters Temporal's history. This file relays those events as server-sent
// events: to POST /v1/tasks/{name}/run with "stream": true (the first turn,
// ending at its done or error) and to GET /v1/runs/{id}/events (every turn,
// from Last-Event-ID on, until an error or the run's end). The event's `id:`
// is its stream sequence, which only grows, so a client that lost its
// connection resumes where it was.
//
// The seed's meanings are kept: error ends a turn that failed, done one
// that answered ("done comes last"), and a stream that ends without either
// was cut off: the connection was lost, never by the API's choice. A model
// call cut short (retried by Temporal, or a JSON answer asked again) does
// not fail the run, so it is never an error, and it does not end the
// stream either: the broker holds its answer's interruption, which is
// never sent, and the stream goes on with the turn's next answer from its
// beginning, its events marked with the answer's number (attempt, 2,
// 3, ...), which tells the client to drop the text it showed of the turn.
// So the POST stream ends with the turn's done or error whatever was tried
// again (docs/streaming.md#retries-never-repeat-text). Before, a stream
// that had relayed the cut answer's text ended at its interruption, and
// only a client that reconnected to GET /v1/runs/{id}/events, which the
// seed does not know, learnt the outcome.

const (
	// memoModel names the run's catalogue model, for units in done events.
	memoModel = "api_model"
	// DefaultKeepAlive spaces the comment lines that keep a quiet stream open.
	DefaultKeepAlive = 15 * time.Second
	// terminalGrace is how long a streamed run waits, once its answer came
	// through Temporal, for the worker's done or error; after it the API
	// writes that event itself (a worker without a broker, a lost publish).
	terminalGrace = 3 * time.Second
	// closedCheck is how often the API asks whether a run /events streams
	// has ended: once per run, whatever its connections (runwatch.go).
	closedCheck = 2 * time.Second
	// followTimeout bounds starting to read a run's events: a broker that
	// is away gets an error event, not a silent wait.
	followTimeout = 10 * time.Second
)

// askOutcome is how a streamed run's ask update ended.
type askOutcome struct {
	res contract.AskResult
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
	// all relays the full vocabulary (events=all, allevents.go), not the
	// seed's three.
	all bool
}

// serve writes the run's events after r.after until the stream ends: an
// error, the first done (firstTurn), the run's end (untilClosed), ctx.
func (s *server) serve(ctx context.Context, out *eventStream, r relay) {
	defer out.end()
	fctx, cancel := context.WithTimeout(ctx, followTimeout)
	f, err := s.cfg.Broker.Follow(fctx, r.runID, r.after)
	// Events up to stored were published before this stream began: an
	// answer among them known to be cut short is skipped, not relayed only
	// for the client to drop it (0: none, or not known; all are relayed as
	// they come).
	var stored int64
	if err == nil {
		stored, _ = s.cfg.Broker.LastID(fctx, r.runID)
	}
	cancel()
	if err != nil {
		_ = out.event(0, readFailed(err))
		return
	}
	defer f.Close()
	events, failed := nextEvents(ctx, f)
	keep := time.NewTicker(s.cfg.KeepAlive)
	defer keep.Stop()
	var ended <-chan struct{}
	if r.untilClosed {
		var leave func()
		ended, leave = s.watchRun(r.runID)
		defer leave()
	}
	var grace, drained <-chan time.Time
	var outcome askOutcome
	var turn turnRelayed
	var held []broker.Event // stored text of an answer whose end is not read yet
	for {
		select {
		case e := <-events:
			if r.all {
				if !s.relayAll(out, r, e) {
					return
				}
				continue
			}
			if e.ID <= stored {
				if !s.replayEvent(out, r, e, &held, &turn, e.ID == stored) {
					return
				}
				continue
			}
			if !s.relayEvent(out, r, e, &turn) {
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
			if !s.endTurn(ctx, out, r, outcome, &turn) {
				return
			}
		case <-ended:
			ended, drained = nil, time.After(time.Second) // events published before the end are read by then
		case <-drained:
			return
		case err := <-failed:
			if ctx.Err() == nil {
				_ = out.event(0, readFailed(err))
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

// nextEvents reads the run's events in the background, until ctx ends or
// reading fails (its error).
func nextEvents(ctx context.Context, f *broker.Follower) (<-chan broker.Event, <-chan error) {
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
	return events, failed
}

// turnRelayed is what a stream has sent of the current turn.
type turnRelayed struct {
	text strings.Builder // the text of the current answer: is it the whole answer?
	sent bool            // some of it was sent
	// answer is the current answer's number (0: none yet); after an
	// interruption, the next answer's: text the API restates (endTurn) is
	// marked with it, so the client drops what it showed of the cut one.
	answer int
}

// relayEvent sends one of the run's events and keeps what was sent of the
// turn in turn. It reports whether the stream goes on: not once the client
// went away, after an error, nor after a run's own done. An interruption
// is never sent, and never ends the stream: the turn's next answer follows
// on it, marked with its number (the client drops the text it showed of
// the turn when the number rises), up to the turn's done or error.
func (s *server) relayEvent(out *eventStream, r relay, e broker.Event, turn *turnRelayed) bool {
	if !seedEvent(e) {
		return true // not the seed's: a newer worker's event, or the model's text a reply wraps
	}
	if e.Interrupted() {
		turn.text.Reset()
		turn.sent = false
		turn.answer = max(turn.answer, e.AnswerNumber()+1)
		return true
	}
	switch e.Type {
	case broker.TypeText:
		if e.AnswerNumber() != turn.answer {
			turn.text.Reset() // an answer begun again: relayed from its start
		}
		turn.text.WriteString(e.Text)
		turn.sent, turn.answer = true, e.AnswerNumber()
	case broker.TypeDone:
		turn.text.Reset()
		turn.sent, turn.answer = false, 0
	}
	if out.event(e.ID, s.streamEvent(r, e)) != nil {
		return false // the client went away
	}
	return e.Type != broker.TypeError && !(r.firstTurn && e.Type == broker.TypeDone)
}

// seedEvent reports whether e is one of the seed's three of the run
// itself: text of the answer, done, error. A newer worker's other events
// (tool calls, a sub-task's events, the text of an agent whose reply
// wraps it) are not relayed: an API older than its workers must skip
// them, never turn them into an error.
func seedEvent(e broker.Event) bool {
	if e.Path != "" {
		return false // a sub-task's: the seed knows the run's own answer only
	}
	switch e.Type {
	case broker.TypeText:
		return !e.Wrapped
	case broker.TypeDone, broker.TypeError:
		return true
	}
	return false
}

// replayEvent relays a stored event, holding an answer's text until its
// end is read: an answer cut short is dropped with its interruption (the
// reader gets the turn's next answer whole, as after a reconnect); any
// other end, or the last stored event, sends what was held. It reports
// whether the stream goes on (relayEvent).
func (s *server) replayEvent(out *eventStream, r relay, e broker.Event, held *[]broker.Event, turn *turnRelayed, last bool) bool {
	switch {
	case e.Interrupted() && len(*held) > 0:
		*held = nil // never sent
		return s.relayEvent(out, r, e, turn)
	case (e.Type == broker.TypeText || !seedEvent(e)) && !last:
		*held = append(*held, e) // an event not relayed holds nothing up
		return true
	}
	flush := append(*held, e)
	*held = nil
	for _, h := range flush {
		if !s.relayEvent(out, r, h, turn) {
			return false
		}
	}
	return true
}

// endTurn ends a turn whose worker published no end, from the ask's
// outcome (terminalOf). It reports whether the stream goes on.
func (s *server) endTurn(ctx context.Context, out *eventStream, r relay, o askOutcome, turn *turnRelayed) bool {
	for _, e := range s.terminalOf(o, r.json, turn.text.String(), turn.answer) {
		// Appended, it arrives through the follower, in order: an
		// interruption is skipped there (relayEvent), and the restated
		// answer follows on this stream and on a reconnect. When the
		// broker is away, this connection still gets the rest, without
		// ids: the restated answer's attempt tells the client it begins
		// again.
		if _, err := s.cfg.Broker.Append(ctx, r.runID, e); err != nil && !e.Interrupted() {
			_ = out.event(0, s.streamEvent(r, e))
			if e.Type != broker.TypeText {
				return false
			}
		}
	}
	return true
}

// readFailed is the error event of a stream whose events cannot be read.
func readFailed(err error) StreamEvent {
	return errorEvent(problem(CodeInternal, "reading the run's events: "+err.Error(), ""), 0)
}

// timedOut ends a run's own stream that outlived AGENT_API_RUN_TIMEOUT.
func (s *server) timedOut(ctx context.Context, out *eventStream, r relay) {
	if r.firstTurn && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		_ = out.event(0, errorEvent(problem(CodeRunTimeout, fmt.Sprintf("run %s did not answer within %s; it goes on: read its answer with GET /v1/runs/%s/messages or GET /v1/runs/%s/events", r.runID, s.cfg.RunTimeout, r.runID, r.runID), ""), 0))
	}
}

// terminalOf ends a turn whose worker published no end (a worker without
// a broker, or whose publishing broke off), from the ask's outcome: its
// error; or the answer's text not yet sent, then done. When the text sent
// (of the turn's answer number answer) is not the start of the answer, the
// answer is restated whole instead: that answer's interruption, then the
// whole text as the next answer, then done. The API's own events have
// turn 0 (no worker attempt is stale behind them).
func (s *server) terminalOf(o askOutcome, answersJSON bool, relayed string, answer int) []broker.Event {
	if o.err != nil {
		typ, msg := errorTypeOf(o.err)
		return []broker.Event{{Type: broker.TypeError, Code: typ, Message: msg}}
	}
	text := contract.TextOf(o.res.Output)
	answer = max(answer, 1)
	var out []broker.Event
	rest, ok := strings.CutPrefix(text, relayed)
	if !ok {
		out = append(out, broker.Event{Type: broker.TypeError, Code: broker.CodeStreamInterrupted, Answer: answer,
			Message: "the text sent is not the answer's; the answer starts again"})
		answer++
		rest = text
	}
	if rest != "" {
		out = append(out, broker.Event{Type: broker.TypeText, Text: rest, Answer: answer})
	}
	e := broker.Event{Type: broker.TypeDone, Answer: answer, StopReason: o.res.Turn.StopReason,
		Usage: &o.res.Turn.Usage}
	if t := strings.TrimSpace(contract.TextOf(o.res.Output)); answersJSON && json.Valid([]byte(t)) {
		e.JSON = json.RawMessage(t)
	}
	return append(out, e)
}
