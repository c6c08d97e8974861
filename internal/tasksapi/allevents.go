package tasksapi

import (
	"encoding/json"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
)

// The full vocabulary (docs/streaming.md#every-event), asked for with
// events=all: every event the workers publish, as stored, none held back,
// withdrawals included. The seed's three (streamevents.go) stay the
// default of both streams.

// EventPosition is where an event belongs: the run's turn, the turn's
// model call (step), that call's Temporal attempt, and the turn's answer
// the attempt writes (answers are begun again when an attempt is cut
// short).
type EventPosition struct {
	Path    string `json:"path,omitempty" doc:"The sub-task the event is of, absent for the run itself: the sub-task's task ID after the run's (<capability>.t<turn>.c<n>, longer for a sub-task's sub-task)"`
	Turn    int    `json:"turn" doc:"The task's turn (1-based); 0 for an event the API wrote itself"`
	Step    int    `json:"step,omitempty" doc:"The turn's model call (1-based): a turn that calls tools makes one per round"`
	Attempt int    `json:"attempt,omitempty" doc:"The model call's attempt (1-based): a call tried again is a later attempt"`
	Answer  int    `json:"answer,omitempty" doc:"The turn's answer this event belongs to (1-based): each model call, and each call cut short and begun again, begins the next"`
}

// TurnTextEvent is the next piece of the model's text.
type TurnTextEvent struct {
	Type string `json:"type" enum:"text"`
	EventPosition
	Text    string `json:"text"`
	Wrapped bool   `json:"wrapped,omitempty" doc:"The model's text, not the reply: the agent's reply is a JSON object that wraps it (exposes, mount)"`
}

// ToolCallStartedEvent is a tool call the model asked for. It is
// provisional: an attempt.retracted of its answer withdraws it.
type ToolCallStartedEvent struct {
	Type string `json:"type" enum:"tool_call.started"`
	EventPosition
	CallID    string          `json:"callId"`
	Name      string          `json:"name" doc:"The function the model called: a capability's name, an MCP tool's <capability>__<tool>, or a built-in"`
	Arguments json.RawMessage `json:"arguments,omitempty" doc:"The arguments as the model wrote them"`
	Truncated bool            `json:"truncated,omitempty" doc:"The arguments were over 16 KiB and are left out"`
}

// ToolCallFinishedEvent is a tool call's result, as the model reads it.
type ToolCallFinishedEvent struct {
	Type string `json:"type" enum:"tool_call.finished"`
	EventPosition
	CallID    string                 `json:"callId"`
	Name      string                 `json:"name"`
	Result    string                 `json:"result" doc:"The start of what the model reads, at most 1,024 bytes"`
	Truncated bool                   `json:"truncated,omitempty" doc:"The result is longer than what is shown"`
	Error     bool                   `json:"error,omitempty" doc:"The model reads an error: the call failed, was refused or did not run"`
	Files     []contract.ContentPart `json:"files,omitempty" doc:"Files the call brought into the run's mount"`
}

// AttemptRetractedEvent withdraws an answer cut short: drop every text and
// tool_call.started event of its turn, step, attempt and answer.
type AttemptRetractedEvent struct {
	Type string `json:"type" enum:"attempt.retracted"`
	EventPosition
	Reason string `json:"reason,omitempty"`
}

// TurnDoneEvent ends a turn that answered.
type TurnDoneEvent struct {
	Type string `json:"type" enum:"done"`
	EventPosition
	StopReason string          `json:"stopReason" enum:"end,max_tokens,refused"`
	Usage      RunUsage        `json:"usage"`
	JSON       json.RawMessage `json:"json,omitempty"`
}

// TurnStartedEvent: a turn began, committing these inputs.
type TurnStartedEvent struct {
	Type string `json:"type" enum:"turn.started"`
	EventPosition
	broker.TurnInputs
}

// InputsCommittedEvent: inputs queued while the turn's tools ran joined
// the turn with its next model call.
type InputsCommittedEvent struct {
	Type string `json:"type" enum:"inputs.committed"`
	EventPosition
	broker.TurnInputs
}

// TurnCommittedEvent: a turn's answer entered the conversation (published
// by the next model call, so it follows that turn's done).
type TurnCommittedEvent struct {
	Type string `json:"type" enum:"turn.committed"`
	EventPosition
	broker.TurnCommitted
}

// SubtaskStartedEvent: a sub-task's first event; its events follow under
// its path, and the delegate call's tool_call.finished ends it.
type SubtaskStartedEvent struct {
	Type string `json:"type" enum:"subtask.started"`
	EventPosition
	broker.SubtaskStarted
}

// ApprovalRequestedEvent: a tool call waits for a person's decision
// (POST /v1/runs/{id}/approvals/{approval}).
type ApprovalRequestedEvent struct {
	Type string `json:"type" enum:"approval.requested"`
	EventPosition
	Approval contract.Approval `json:"approval"`
}

// ApprovalDecidedEvent: the decision, by whom and why (or the runtime's:
// a timeout, a close, a cancel).
type ApprovalDecidedEvent struct {
	Type string `json:"type" enum:"approval.decided"`
	EventPosition
	Approval contract.Approval `json:"approval"`
}

// BudgetWaitingEvent: the next model call waits for a budget raise.
type BudgetWaitingEvent struct {
	Type string `json:"type" enum:"budget.waiting"`
	EventPosition
	broker.BudgetWaiting
}

// BudgetRaisedEvent: a raise came while a call waited.
type BudgetRaisedEvent struct {
	Type string `json:"type" enum:"budget.raised"`
	EventPosition
	broker.BudgetRaised
}

// ShapingAttemptEvent: the shaping pass's verdict on one attempt.
type ShapingAttemptEvent struct {
	Type string `json:"type" enum:"shaping.attempt"`
	EventPosition
	broker.ShapingAttempt
}

// TurnErrorEvent ends a turn that failed: the problem document.
type TurnErrorEvent struct {
	Type string `json:"type" enum:"error"`
	EventPosition
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail,omitempty"`
}

// allEventTypes are the full vocabulary's events by type.
var allEventTypes = map[string]any{
	broker.TypeTurnStarted: TurnStartedEvent{}, broker.TypeInputsCommitted: InputsCommittedEvent{},
	broker.TypeText: TurnTextEvent{}, broker.TypeToolCallStarted: ToolCallStartedEvent{},
	broker.TypeToolCallFinished: ToolCallFinishedEvent{}, broker.TypeApprovalRequested: ApprovalRequestedEvent{},
	broker.TypeApprovalDecided: ApprovalDecidedEvent{}, broker.TypeBudgetWaiting: BudgetWaitingEvent{},
	broker.TypeBudgetRaised: BudgetRaisedEvent{}, broker.TypeSubtaskStarted: SubtaskStartedEvent{},
	broker.TypeShapingAttempt: ShapingAttemptEvent{}, broker.TypeTurnCommitted: TurnCommittedEvent{},
	typeAttemptRetracted: AttemptRetractedEvent{}, broker.TypeDone: TurnDoneEvent{}, broker.TypeError: TurnErrorEvent{},
}

// allEventOrder is the order the description lists them in.
var allEventOrder = []string{broker.TypeTurnStarted, broker.TypeInputsCommitted, broker.TypeText,
	broker.TypeToolCallStarted, broker.TypeToolCallFinished, broker.TypeApprovalRequested, broker.TypeApprovalDecided,
	broker.TypeBudgetWaiting, broker.TypeBudgetRaised, broker.TypeSubtaskStarted, broker.TypeShapingAttempt,
	broker.TypeTurnCommitted, typeAttemptRetracted, broker.TypeDone, broker.TypeError}

// typeAttemptRetracted is how the full vocabulary shows an interruption.
const typeAttemptRetracted = "attempt.retracted"

// StreamEventAll is the data of one event of the full vocabulary.
type StreamEventAll struct{}

// Schema describes StreamEventAll as one of the full vocabulary's events,
// chosen by type (huma.SchemaProvider).
func (StreamEventAll) Schema(r huma.Registry) *huma.Schema {
	const name = "StreamEventAll"
	if _, ok := r.Map()[name]; !ok {
		s := &huma.Schema{Description: "The data of one server-sent event of events=all: every event of the run, `type` says which",
			Discriminator: &huma.Discriminator{PropertyName: "type", Mapping: map[string]string{}}}
		for _, typ := range allEventOrder {
			ref := r.Schema(reflect.TypeOf(allEventTypes[typ]), true, "")
			s.OneOf = append(s.OneOf, ref)
			s.Discriminator.Mapping[typ] = ref.Ref
		}
		r.Map()[name] = s
	}
	return &huma.Schema{Ref: "#/components/schemas/" + name}
}

// fullEvent is what a client of events=all reads of a broker event, and
// false for a type this API does not know (a newer worker's: skipped).
func (s *server) fullEvent(r relay, e broker.Event) (StreamEvent, bool) {
	at := EventPosition{Path: e.Path, Turn: e.Turn, Step: e.Step, Attempt: e.Attempt, Answer: e.Answer}
	if ev, ok, known := dataEvent(e, at); known {
		return ev, ok
	}
	switch {
	case e.Interrupted():
		at.Step, at.Attempt = e.Cut()
		return StreamEvent{AttemptRetractedEvent{Type: typeAttemptRetracted, EventPosition: at, Reason: e.Message}}, true
	case e.Type == broker.TypeText:
		return StreamEvent{TurnTextEvent{Type: e.Type, EventPosition: at, Text: e.Text, Wrapped: e.Wrapped}}, true
	case e.Type == broker.TypeToolCallStarted && e.Tool != nil:
		return StreamEvent{ToolCallStartedEvent{Type: e.Type, EventPosition: at, CallID: e.Tool.ID, Name: e.Tool.Name,
			Arguments: e.Tool.Arguments, Truncated: e.Tool.Truncated}}, true
	case e.Type == broker.TypeToolCallFinished && e.Tool != nil:
		return StreamEvent{ToolCallFinishedEvent{Type: e.Type, EventPosition: at, CallID: e.Tool.ID, Name: e.Tool.Name,
			Result: e.Tool.Result, Truncated: e.Tool.Truncated, Error: e.Tool.Error, Files: e.Tool.Files}}, true
	case e.Type == broker.TypeDone:
		var u contract.Usage
		if e.Usage != nil {
			u = *e.Usage
		}
		stop := e.StopReason
		if stop == "" {
			stop = "end"
		}
		return StreamEvent{TurnDoneEvent{Type: e.Type, EventPosition: at, StopReason: stop, Usage: s.runUsage(r.model, u), JSON: e.JSON}}, true
	case e.Type == broker.TypeError:
		p := problemOfType(e.Code, e.Message)
		return StreamEvent{TurnErrorEvent{Type: e.Type, EventPosition: at, Title: p.Title, Status: p.Status, Code: p.Code, Detail: p.Detail}}, true
	}
	return StreamEvent{}, false
}

// dataEvents make, for each type whose body is its Data, the event and
// where its body is read into: the event itself, whose embedded body
// brings its keys (none of them the envelope's: type, path, turn, ...), or
// an approval's "approval".
var dataEvents = map[string]func(EventPosition) (event, body any){
	broker.TypeTurnStarted: func(at EventPosition) (any, any) {
		v := &TurnStartedEvent{Type: broker.TypeTurnStarted, EventPosition: at}
		return v, v
	},
	broker.TypeInputsCommitted: func(at EventPosition) (any, any) {
		v := &InputsCommittedEvent{Type: broker.TypeInputsCommitted, EventPosition: at}
		return v, v
	},
	broker.TypeTurnCommitted: func(at EventPosition) (any, any) {
		v := &TurnCommittedEvent{Type: broker.TypeTurnCommitted, EventPosition: at}
		return v, v
	},
	broker.TypeSubtaskStarted: func(at EventPosition) (any, any) {
		v := &SubtaskStartedEvent{Type: broker.TypeSubtaskStarted, EventPosition: at}
		return v, v
	},
	broker.TypeBudgetWaiting: func(at EventPosition) (any, any) {
		v := &BudgetWaitingEvent{Type: broker.TypeBudgetWaiting, EventPosition: at}
		return v, v
	},
	broker.TypeBudgetRaised: func(at EventPosition) (any, any) {
		v := &BudgetRaisedEvent{Type: broker.TypeBudgetRaised, EventPosition: at}
		return v, v
	},
	broker.TypeShapingAttempt: func(at EventPosition) (any, any) {
		v := &ShapingAttemptEvent{Type: broker.TypeShapingAttempt, EventPosition: at}
		return v, v
	},
	broker.TypeApprovalRequested: func(at EventPosition) (any, any) {
		v := &ApprovalRequestedEvent{Type: broker.TypeApprovalRequested, EventPosition: at}
		return v, &v.Approval
	},
	broker.TypeApprovalDecided: func(at EventPosition) (any, any) {
		v := &ApprovalDecidedEvent{Type: broker.TypeApprovalDecided, EventPosition: at}
		return v, &v.Approval
	},
}

// dataEvent is an event whose body is its Data (known: e is of such a
// type; ok: its body reads).
func dataEvent(e broker.Event, at EventPosition) (ev StreamEvent, ok, known bool) {
	newEvent, known := dataEvents[e.Type]
	if !known {
		return StreamEvent{}, false, false
	}
	event, body := newEvent(at)
	return StreamEvent{event}, json.Unmarshal(e.Data, body) == nil, true
}

// relayAll sends one event of the full vocabulary. It reports whether the
// stream goes on: not once the client went away, after a turn's error,
// nor after a run's own done.
func (s *server) relayAll(out *eventStream, r relay, e broker.Event) bool {
	ev, ok := s.fullEvent(r, e)
	if !ok {
		return true
	}
	if out.event(e.ID, ev) != nil {
		return false
	}
	if e.Path != "" {
		return true // a sub-task's end is not the run's
	}
	end := e.Type == broker.TypeError && !e.Interrupted()
	return !end && !(r.firstTurn && e.Type == broker.TypeDone)
}
