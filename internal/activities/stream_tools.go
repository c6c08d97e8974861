package activities

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
)

// A turn that calls tools streams them (docs/streaming.md#every-event):
// each model call is a step of the turn; the tool calls a step's answer
// asks for are published when it ends (provisional, like its text: a
// later attempt of the step withdraws them), and their results are
// published by the next step, before anything else of it, from its input
// (facts: the same on every attempt, so published once).

// maxStreamedArguments bounds a tool call's arguments in its event: larger
// arguments are left out (Truncated), the call is still shown.
const maxStreamedArguments = 16 << 10

// callFacts are the events a model call publishes first, from its input
// alone (the same on every attempt): a sub-task's start (its first call),
// the turns whose answers it stamps as committed, the inputs it commits
// (the turn's start, or inputs that joined it while its tools ran), and
// the results of the tools the turn's previous call asked for.
func callFacts(in ModelTurnInput) []broker.Event {
	var facts []broker.Event
	if strings.Contains(in.Task(), ".") && in.Turn == 1 && in.Step == 1 { // a sub-task's ID: <parent>.<capability>.t<turn>.c<n>
		facts = append(facts, broker.WithData(broker.Event{Type: broker.TypeSubtaskStarted}, broker.SubtaskStarted{TaskID: in.Task()}))
	}
	for _, st := range in.Stamps {
		facts = append(facts, broker.WithData(broker.Event{Type: broker.TypeTurnCommitted},
			broker.TurnCommitted{CommittedTurn: st.Turn, Position: st.Position, CommittedAt: st.CommittedAt}))
	}
	if inputs := committedInputs(in.Write); len(inputs) > 0 {
		typ := broker.TypeTurnStarted
		if in.Step > 1 {
			typ = broker.TypeInputsCommitted
		}
		facts = append(facts, broker.WithData(broker.Event{Type: typ}, broker.TurnInputs{Inputs: inputs}))
	}
	return append(facts, stepFacts(in.Scratch)...)
}

// committedInputs are the inputs among the entries a call writes.
func committedInputs(write []PositionedEntry) []broker.CommittedInput {
	var out []broker.CommittedInput
	for _, w := range write {
		if w.Entry.Type != contract.TypeInput {
			continue
		}
		text, cut := summarize(contract.TextOf(w.Entry.TaskIO), broker.MaxInputSummary)
		c := broker.CommittedInput{Position: w.Position, ReceivedAt: w.Entry.ReceivedAt, CommittedAt: w.Entry.CommittedAt, Text: text, Truncated: cut}
		if id, ok := w.Entry.Values[contract.KeyInputID]; ok {
			_ = json.Unmarshal(id, &c.InputID)
		}
		out = append(out, c)
	}
	return out
}

// stepFacts are the events of what happened since the turn's previous
// step: the results of the tool calls its answer asked for, the last
// exchange of scratch, in the order the model reads them.
func stepFacts(scratch []ScratchMessage) []broker.Event {
	last := -1
	for i := range scratch {
		if len(scratch[i].ToolCalls) > 0 {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	names := map[string]string{}
	for _, c := range scratch[last].ToolCalls {
		names[c.ID] = c.Name
	}
	var facts []broker.Event
	for _, r := range scratch[last+1:] {
		if r.ToolCallID == "" {
			continue
		}
		summary, cut := summarize(r.Content, broker.MaxToolSummary)
		facts = append(facts, broker.Event{Type: broker.TypeToolCallFinished, Tool: &broker.ToolCall{
			ID: r.ToolCallID, Name: names[r.ToolCallID], Result: summary, Truncated: cut,
			// Every answer the model reads in place of a result (a
			// failure, a refusal, arguments that do not fit) says
			// "error: " first.
			Error: strings.HasPrefix(r.Content, "error: "), Files: r.Files}})
	}
	return facts
}

// toolCallEvents are the tool calls an answer asked for, as events.
func toolCallEvents(calls []ToolCall) []broker.ToolCall {
	out := make([]broker.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = broker.ToolCall{ID: c.ID, Name: c.Name}
		switch {
		case len(c.Arguments) > maxStreamedArguments:
			out[i].Truncated = true
		case json.Valid([]byte(c.Arguments)):
			out[i].Arguments = json.RawMessage(c.Arguments)
		case c.Arguments != "":
			// Not JSON (a model's slip, answered as an error next):
			// shown as the string it is.
			out[i].Arguments, _ = json.Marshal(c.Arguments)
		}
	}
	return out
}

// summarize is s cut to at most limit bytes at a rune boundary, and
// whether it was cut.
func summarize(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	n := limit
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}
