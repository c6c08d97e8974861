package agents

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/starter"
)

// A task's events as it runs (docs/streaming.md#every-event): the text the
// model writes, the tool calls it asks for and their results, approvals,
// budget waits, sub-tasks, the turn's end. Unlike the rest of this
// package, reading them is not workflow code (it does I/O): call it from
// any Go service, or from a workflow inside an activity.

// Event types (Event.Type).
const (
	EventTurnStarted       = broker.TypeTurnStarted
	EventInputsCommitted   = broker.TypeInputsCommitted
	EventText              = broker.TypeText
	EventToolCallStarted   = broker.TypeToolCallStarted
	EventToolCallFinished  = broker.TypeToolCallFinished
	EventApprovalRequested = broker.TypeApprovalRequested
	EventApprovalDecided   = broker.TypeApprovalDecided
	EventBudgetWaiting     = broker.TypeBudgetWaiting
	EventBudgetRaised      = broker.TypeBudgetRaised
	EventSubtaskStarted    = broker.TypeSubtaskStarted
	EventShapingAttempt    = broker.TypeShapingAttempt
	EventTurnCommitted     = broker.TypeTurnCommitted
	// EventAttemptRetracted withdraws an answer cut short: drop every
	// text and tool-call-started event of its Turn, Step, Attempt and
	// Answer.
	EventAttemptRetracted = "attempt.retracted"
	EventDone             = broker.TypeDone
	EventError            = broker.TypeError
)

// Event is one event of a task.
type Event struct {
	// ID grows with every event of the task's run (its sub-tasks'
	// included): Events(..., after) goes on after it.
	ID   int64
	Type string
	// Path is the sub-task the event is of ("" for the task itself), its
	// task ID after the run's: "helper.t1.c2".
	Path string
	// Turn, Step (the turn's model call), Attempt (its Temporal attempt)
	// and Answer (the turn's answer it belongs to) place the event.
	Turn, Step, Attempt, Answer int

	Text    string // EventText
	Wrapped bool   // EventText: the model's text, which the agent's reply wraps
	Tool    *ToolCall
	// Data is the body of the other types, as JSON (contract.Approval for
	// approvals; docs/streaming.md has each): read it with Decode.
	Data json.RawMessage

	StopReason string          // EventDone
	Usage      *contract.Usage // EventDone
	JSON       json.RawMessage // EventDone: a JSON task's answer
	Code       string          // EventError: the error type (MODEL_ERROR, TURN_CANCELED, ...)
	Message    string          // EventError, EventAttemptRetracted: why
}

// ToolCall is a tool call's event: asked for (EventToolCallStarted) or
// finished with its result (EventToolCallFinished).
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage        // started
	Result    string                 // finished: the start of what the model reads, at most 1,024 bytes
	Truncated bool                   // arguments left out (over 16 KiB), or the result cut
	Error     bool                   // finished: the model reads an error
	Files     []contract.ContentPart // finished: files the call brought
}

// Decode reads e's Data into v: a contract.Approval for approvals, or the
// body docs/streaming.md gives for its type.
func (e Event) Decode(v any) error {
	if len(e.Data) == 0 {
		return errors.New("agents: a " + e.Type + " event has no body")
	}
	return json.Unmarshal(e.Data, v)
}

// EventSource reads tasks' events from the broker (AGENT_NATS_URL).
type EventSource struct {
	b      *broker.Broker
	tc     client.Client
	closed time.Duration // how often WithTemporal asks whether the task ended
}

type eventsConfig struct {
	keys string
	tc   client.Client
}

// EventsOption configures ConnectEvents.
type EventsOption func(*eventsConfig)

// WithCodecKeys reads events sealed with the runtime's codec: keys as in
// AGENT_CODEC_KEYS ("k1:base64key,...").
func WithCodecKeys(keys string) EventsOption { return func(c *eventsConfig) { c.keys = keys } }

// WithTemporal ends Events about a second after the task's workflow has
// closed (otherwise it ends with ctx, or at a task's error).
func WithTemporal(c client.Client) EventsOption { return func(cfg *eventsConfig) { cfg.tc = c } }

// ConnectEvents connects to the broker at natsURL, waiting until it is
// reachable or ctx ends.
func ConnectEvents(ctx context.Context, natsURL string, opts ...EventsOption) (*EventSource, error) {
	var cfg eventsConfig
	for _, o := range opts {
		o(&cfg)
	}
	var c *codec.Codec
	if cfg.keys != "" {
		keys, err := codec.ParseKeys(cfg.keys)
		if err != nil {
			return nil, err
		}
		if c, err = codec.New(keys, keys.IDs()[0]); err != nil {
			return nil, err
		}
	}
	b, err := broker.Connect(ctx, natsURL, "agenttask-events")
	if err != nil {
		return nil, err
	}
	if c != nil {
		b.SetCodec(c)
	}
	return &EventSource{b: b, tc: cfg.tc, closed: 2 * time.Second}, nil
}

// Close disconnects.
func (s *EventSource) Close() { s.b.Close() }

// Events yields the task's events after the event ID after (0: from the
// first kept; events are kept for an hour), its sub-tasks' included, then
// live ones as they come. It ends when ctx ends (without an error), at an
// error reading them (yielded), after the task's own EventError, or, with
// WithTemporal, once the task has ended. The task ID is a run's: one
// token of A-Z, a-z, 0-9, '_' and '-'.
func (s *EventSource) Events(ctx context.Context, taskID string, after int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		f, err := s.b.Follow(ctx, taskID, after)
		if err != nil {
			yield(Event{}, err)
			return
		}
		defer f.Close()
		if s.tc != nil {
			go s.cancelWhenEnded(ctx, cancel, taskID)
		}
		for {
			e, err := f.Next(ctx)
			if err != nil {
				if ctx.Err() == nil {
					yield(Event{}, err)
				}
				return
			}
			ev := eventOf(e)
			if !yield(ev, nil) {
				return
			}
			if ev.Type == EventError && ev.Path == "" {
				return
			}
		}
	}
}

// cancelWhenEnded cancels a second after the task's workflow has ended
// (starter.Client.Ended): events published before its end are read by then.
func (s *EventSource) cancelWhenEnded(ctx context.Context, cancel context.CancelFunc, taskID string) {
	c := starter.New(s.tc, "")
	t := time.NewTicker(s.closed)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ended, err := c.Ended(ctx, taskID); err == nil && ended {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
				cancel()
			}
			return
		}
	}
}

// eventOf is a broker event with exported types only.
func eventOf(e broker.Event) Event {
	out := Event{ID: e.ID, Type: e.Type, Path: e.Path, Turn: e.Turn, Step: e.Step, Attempt: e.Attempt, Answer: e.AnswerNumber(),
		Text: e.Text, Wrapped: e.Wrapped, Data: e.Data, StopReason: e.StopReason, Usage: e.Usage, JSON: e.JSON, Code: e.Code, Message: e.Message}
	if e.Interrupted() {
		out.Type, out.Code = EventAttemptRetracted, ""
		out.Step, out.Attempt = e.Cut()
	}
	if t := e.Tool; t != nil {
		out.Tool = &ToolCall{ID: t.ID, Name: t.Name, Arguments: t.Arguments, Result: t.Result, Truncated: t.Truncated, Error: t.Error, Files: t.Files}
	}
	return out
}
