package tasksapi

import (
	"encoding/json"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
)

// The events of a stream, as a client reads them: each is one unnamed
// server-sent event (no `event:` line, so EventSource's onmessage gets
// them all) whose data is a TextEvent, a DoneEvent or an ErrorEvent, told
// apart by type. Their fields keep the order and the omitted empties of
// the one flat event they replace, so the JSON on the wire is unchanged.

// TextEvent is the next piece of a turn's answer.
type TextEvent struct {
	Type    string `json:"type" enum:"text"`
	Text    string `json:"text,omitempty" doc:"The next piece of the answer; the pieces join to the answer's text, nothing between them"`
	Attempt int    `json:"attempt,omitempty" doc:"From 2 on: the turn's answer begun again after an earlier one was cut short (a model call tried again, a JSON answer asked again). Text with a higher attempt than the turn's text shown so far starts the answer again: drop that text"`
}

// DoneEvent ends a turn whose answer is complete.
type DoneEvent struct {
	Type       string          `json:"type" enum:"done"`
	StopReason string          `json:"stopReason" enum:"end,max_tokens,refused"`
	Usage      RunUsage        `json:"usage" doc:"Every model call of the turn; units at the catalogue's prices for the run's model"`
	JSON       json.RawMessage `json:"json,omitempty" doc:"For a task with JSON answers: the answer parsed"`
	Attempt    int             `json:"attempt,omitempty" doc:"From 2 on: the turn's answer begun again after an earlier one was cut short (a model call tried again, a JSON answer asked again). Text with a higher attempt than the turn's text shown so far starts the answer again: drop that text"`
}

// ErrorEvent ends a turn in place of done: the problem document, its type
// URI giving way to "error".
type ErrorEvent struct {
	Type    string `json:"type" enum:"error"`
	Attempt int    `json:"attempt,omitempty" doc:"From 2 on: the turn's answer begun again after an earlier one was cut short (a model call tried again, a JSON answer asked again). Text with a higher attempt than the turn's text shown so far starts the answer again: drop that text"`
	Title   string `json:"title"`
	Status  int    `json:"status"`
	Code    string `json:"code" enum:"validation_failed,run_closed,run_timeout,model_error,internal"`
	Detail  string `json:"detail,omitempty"`
}

// StreamEvent is the data of one event: one of the three above. The
// server-sent events of both streams are described from it (sse.Register).
type StreamEvent struct {
	data any // TextEvent, DoneEvent or ErrorEvent
}

// MarshalJSON writes the event itself: the data of the `data:` line.
func (e StreamEvent) MarshalJSON() ([]byte, error) { return json.Marshal(e.data) }

// streamEventTypes are the events by their type, for the description.
var streamEventTypes = map[string]any{broker.TypeText: TextEvent{}, broker.TypeDone: DoneEvent{}, broker.TypeError: ErrorEvent{}}

// Schema describes StreamEvent as one of the typed events, chosen by type
// (huma.SchemaProvider); it is the StreamEvent component.
func (StreamEvent) Schema(r huma.Registry) *huma.Schema {
	const name = "StreamEvent"
	if _, ok := r.Map()[name]; !ok {
		s := &huma.Schema{Description: "The data of one server-sent event: text, then done or error; `type` says which",
			Discriminator: &huma.Discriminator{PropertyName: "type", Mapping: map[string]string{}}}
		for _, typ := range []string{broker.TypeText, broker.TypeDone, broker.TypeError} {
			ref := r.Schema(reflect.TypeOf(streamEventTypes[typ]), true, "")
			s.OneOf = append(s.OneOf, ref)
			s.Discriminator.Mapping[typ] = ref.Ref
		}
		r.Map()[name] = s
	}
	return &huma.Schema{Ref: "#/components/schemas/" + name}
}

func errorEvent(p *Problem, attempt int) StreamEvent {
	return StreamEvent{ErrorEvent{Type: broker.TypeError, Attempt: attempt, Title: p.Title, Status: p.Status, Code: p.Code, Detail: p.Detail}}
}

// streamEvent is what a client reads of a broker event (never an
// interruption: relayEvent skips it). Its attempt is the turn's answer
// number, from 2 on.
func (s *server) streamEvent(r relay, e broker.Event) StreamEvent {
	attempt := 0
	if e.AnswerNumber() > 1 {
		attempt = e.AnswerNumber()
	}
	switch e.Type {
	case broker.TypeText:
		return StreamEvent{TextEvent{Type: e.Type, Text: e.Text, Attempt: attempt}}
	case broker.TypeDone:
		out := DoneEvent{Type: e.Type, StopReason: e.StopReason, JSON: e.JSON, Attempt: attempt}
		if out.StopReason == "" {
			out.StopReason = "end"
		}
		var u contract.Usage
		if e.Usage != nil {
			u = *e.Usage
		}
		out.Usage = s.runUsage(r.model, u)
		return StreamEvent{out}
	}
	return errorEvent(problemOfType(e.Code, e.Message), attempt)
}
