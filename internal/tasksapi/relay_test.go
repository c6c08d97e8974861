package tasksapi

import (
	"testing"

	"github.com/danielgtaylor/huma/v2/sse"
	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/catalog"
)

// sent collects what a stream writes.
type sent []sse.Message

func (s *sent) stream() *eventStream {
	return &eventStream{send: func(m sse.Message) error { *s = append(*s, m); return nil }}
}

// A model call cut short is never an error on a stream, and never its end
// (docs/streaming.md#a-runs-end: done comes last): the stream that carried
// its text skips the interruption and goes on with the turn's next answer,
// marked with its number, up to done. A reconnect, which sent none of the
// cut answer, reads the same next answer.
func TestAnInterruptedAnswerIsFollowedOnTheSameStream(t *testing.T) {
	s := &server{cfg: Config{Catalog: catalog.Builtin()}}
	r := relay{runID: "run-x", firstTurn: true}
	run := []broker.Event{
		{ID: 10, Turn: 1, Attempt: 1, Answer: 1, Type: broker.TypeText, Text: "Pole "},
		{ID: 12, Turn: 1, Attempt: 1, Answer: 1, Type: broker.TypeError, Code: broker.CodeStreamInterrupted},
		{ID: 15, Turn: 1, Attempt: 2, Answer: 2, Type: broker.TypeText, Text: "Habari, Amina."},
		{ID: 16, Turn: 1, Attempt: 2, Answer: 2, Type: broker.TypeDone, StopReason: "end"},
	}
	var first sent
	var turn turnRelayed
	out := first.stream()
	require.True(t, s.relayEvent(out, r, run[0], &turn))
	require.True(t, s.relayEvent(out, r, run[1], &turn), "the interruption does not end the stream that sent the answer's text")
	require.Len(t, first, 1, "nothing is sent for the interruption: no error")
	require.True(t, s.relayEvent(out, r, run[2], &turn))
	require.False(t, s.relayEvent(out, r, run[3], &turn), "a run's own stream ends at done")
	var ids []int
	for _, m := range first {
		ids = append(ids, m.ID)
	}
	require.Equal(t, []int{10, 15, 16}, ids)
	require.Equal(t, TextEvent{Type: "text", Text: "Habari, Amina.", Attempt: 2}, first[1].Data.(StreamEvent).data)
	require.Equal(t, 2, first[2].Data.(StreamEvent).data.(DoneEvent).Attempt)

	var again sent
	turn = turnRelayed{}
	out = again.stream()
	require.True(t, s.relayEvent(out, r, run[1], &turn), "a reconnect after the text skips the interruption")
	require.True(t, s.relayEvent(out, r, run[2], &turn))
	require.False(t, s.relayEvent(out, r, run[3], &turn), "a run's own stream ends at done")
	require.Equal(t, first[1:], again, "the reconnect reads what the stream read after the cut answer")
}

// A stream that relayed an answer's text, then its interruption, and whose
// turn the API ends itself (the next answer never came through the
// broker) restates the answer as the next answer: the client drops the
// cut text.
func TestTheAPIEndsATurnAfterAnInterruptionAsItsNextAnswer(t *testing.T) {
	s := &server{cfg: Config{Catalog: catalog.Builtin()}}
	r := relay{runID: "run-x", firstTurn: true}
	var got sent
	var turn turnRelayed
	out := got.stream()
	require.True(t, s.relayEvent(out, r, broker.Event{ID: 10, Turn: 1, Attempt: 1, Answer: 1, Type: broker.TypeText, Text: "Pole "}, &turn))
	require.True(t, s.relayEvent(out, r, broker.Event{ID: 12, Turn: 1, Attempt: 1, Answer: 1, Type: broker.TypeError, Code: broker.CodeStreamInterrupted}, &turn))
	text := "Habari, Amina."
	o := askOutcome{res: contract.AskResult{Output: contract.TaskIO{Message: []contract.ContentPart{{Text: &text}}}}}
	end := s.terminalOf(o, false, turn.text.String(), turn.answer)
	require.Len(t, end, 2)
	require.Equal(t, broker.Event{Type: broker.TypeText, Text: text, Answer: 2}, end[0], "the answer, marked as the turn's next")
	require.Equal(t, 2, end[1].Answer)
}

// The API ends a turn whose worker's end never came: text it relayed that
// is not the start of the answer is not an error either: the answer is
// interrupted and restated whole as the turn's next answer.
func TestTheAPIRestatesAnAnswerItRelayedWrong(t *testing.T) {
	s := &server{cfg: Config{Catalog: catalog.Builtin()}}
	text := "Habari, Amina."
	o := askOutcome{res: contract.AskResult{Output: contract.TaskIO{Message: []contract.ContentPart{{Text: &text}}}}}

	rest := s.terminalOf(o, false, "Habari, ", 1)
	require.Len(t, rest, 2)
	require.Equal(t, broker.Event{Type: broker.TypeText, Text: "Amina.", Answer: 1}, rest[0])
	require.Equal(t, broker.TypeDone, rest[1].Type)

	restated := s.terminalOf(o, false, "Pole sana", 1)
	require.Len(t, restated, 3)
	require.True(t, restated[0].Interrupted())
	require.Equal(t, 1, restated[0].Answer)
	require.Equal(t, broker.Event{Type: broker.TypeText, Text: text, Answer: 2}, restated[1])
	require.Equal(t, 2, restated[2].Answer)
	require.Equal(t, broker.TypeDone, restated[2].Type)
}

// Replaying stored events, an answer already known to be cut short is
// skipped whole, with its interruption: a reader from the run's start
// gets the answer that followed, uncut. The last stored event sends what
// is held (its answer goes on live).
func TestAReplaySkipsAnAnswerStoredCutShort(t *testing.T) {
	s := &server{cfg: Config{Catalog: catalog.Builtin()}}
	r := relay{runID: "run-x", untilClosed: true}
	stored := []broker.Event{
		{ID: 10, Turn: 1, Answer: 1, Type: broker.TypeText, Text: "Pole "},
		{ID: 11, Turn: 1, Answer: 1, Type: broker.TypeText, Text: "sana"},
		{ID: 12, Turn: 1, Answer: 1, Type: broker.TypeError, Code: broker.CodeStreamInterrupted},
		{ID: 15, Turn: 1, Answer: 2, Type: broker.TypeText, Text: "Habari, Amina."},
		{ID: 16, Turn: 1, Answer: 2, Type: broker.TypeDone},
		{ID: 20, Turn: 2, Answer: 1, Type: broker.TypeText, Text: "It left "},
	}
	var got sent
	var held []broker.Event
	var turn turnRelayed
	out := got.stream()
	for i, e := range stored {
		require.True(t, s.replayEvent(out, r, e, &held, &turn, i == len(stored)-1))
	}
	var ids []int
	for _, m := range got {
		ids = append(ids, m.ID)
	}
	require.Equal(t, []int{15, 16, 20}, ids, "the cut answer and its interruption skipped; the live answer's stored text sent")
	require.True(t, turn.sent, "the live answer's text was sent")
}

// The seed's streams carry text, done and error only: a newer worker's
// tool-call events and the text of a reply that wraps it are skipped,
// live and replayed, and never turned into an error; the turn's answer
// after a tool step is a new answer number, so a client drops the text
// the model wrote before it called a tool.
func TestTheSeedStreamSkipsEventsItDoesNotKnow(t *testing.T) {
	s := &server{cfg: Config{Catalog: catalog.Builtin()}}
	r := relay{runID: "run-x", untilClosed: true}
	run := []broker.Event{
		{ID: 10, Turn: 1, Step: 1, Attempt: 1, Answer: 1, Type: broker.TypeText, Text: "Let me look. "},
		{ID: 11, Turn: 1, Step: 1, Attempt: 1, Answer: 1, Type: broker.TypeToolCallStarted, Tool: &broker.ToolCall{ID: "c", Name: "crm"}},
		{ID: 12, Turn: 1, Step: 2, Attempt: 1, Answer: 2, Fact: 1, Type: broker.TypeToolCallFinished, Tool: &broker.ToolCall{ID: "c", Name: "crm", Result: "ok"}},
		{ID: 13, Turn: 1, Step: 2, Attempt: 1, Answer: 2, Type: "some.future_event"},
		{ID: 14, Turn: 1, Step: 2, Attempt: 1, Answer: 2, Type: broker.TypeText, Text: "Found it."},
		{ID: 15, Turn: 1, Step: 2, Attempt: 1, Answer: 2, Type: broker.TypeDone, StopReason: "end"},
		{ID: 20, Turn: 2, Step: 1, Attempt: 1, Answer: 1, Type: broker.TypeText, Wrapped: true, Text: "model text"},
		{ID: 21, Turn: 2, Step: 1, Attempt: 1, Answer: 1, Type: broker.TypeDone, StopReason: "end"},
	}
	ids := func(ms sent) []int {
		var out []int
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	var live sent
	var turn turnRelayed
	out := live.stream()
	for _, e := range run {
		require.True(t, s.relayEvent(out, r, e, &turn))
	}
	require.Equal(t, []int{10, 14, 15, 21}, ids(live))
	require.Equal(t, TextEvent{Type: "text", Text: "Found it.", Attempt: 2}, live[1].Data.(StreamEvent).data, "the answer after the tool step starts the answer again")

	var replayed sent
	var held []broker.Event
	turn = turnRelayed{}
	out = replayed.stream()
	for i, e := range run {
		require.True(t, s.replayEvent(out, r, e, &held, &turn, i == len(run)-1))
	}
	require.Equal(t, []int{10, 14, 15, 21}, ids(replayed))
}

// events=all relays every event as stored, nothing held back: a tool
// call asked for, the interruption as attempt.retracted naming the cut
// attempt, the result, the answer; an unknown type is skipped; an error
// ends the stream.
func TestTheFullVocabularyRelaysEveryEvent(t *testing.T) {
	s := &server{cfg: Config{Catalog: catalog.Builtin()}}
	r := relay{runID: "run-x", untilClosed: true, all: true}
	run := []broker.Event{
		{ID: 10, Turn: 1, Step: 1, Attempt: 1, Answer: 1, Type: broker.TypeToolCallStarted, Tool: &broker.ToolCall{ID: "c0", Name: "refund", Arguments: []byte(`{"amount":40}`)}},
		{ID: 11, Turn: 1, Step: 1, Attempt: 2, Answer: 1, CutStep: 1, CutAttempt: 1, Type: broker.TypeError, Code: broker.CodeStreamInterrupted, Message: "retried"},
		{ID: 12, Turn: 1, Step: 1, Attempt: 2, Answer: 2, Type: broker.TypeToolCallStarted, Tool: &broker.ToolCall{ID: "c1", Name: "crm__lookup"}},
		{ID: 13, Turn: 1, Step: 2, Attempt: 1, Answer: 3, Fact: 1, Type: broker.TypeToolCallFinished, Tool: &broker.ToolCall{ID: "c1", Name: "crm__lookup", Result: "error: down", Error: true}},
		{ID: 14, Turn: 1, Step: 2, Attempt: 1, Answer: 3, Type: "some.future_event"},
		{ID: 15, Turn: 1, Step: 2, Attempt: 1, Answer: 3, Type: broker.TypeText, Text: "Sorry.", Wrapped: true},
		{ID: 16, Turn: 1, Step: 2, Attempt: 1, Answer: 3, Type: broker.TypeDone},
		{ID: 17, Turn: 2, Step: 1, Attempt: 1, Answer: 1, Type: broker.TypeError, Code: "MODEL_ERROR", Message: "refused"},
	}
	var got sent
	out := got.stream()
	for i, e := range run {
		goesOn := s.relayAll(out, r, e)
		require.Equal(t, i != len(run)-1, goesOn, "event %d", i)
	}
	var ids []int
	for _, m := range got {
		ids = append(ids, m.ID)
	}
	require.Equal(t, []int{10, 11, 12, 13, 15, 16, 17}, ids)
	require.Equal(t, ToolCallStartedEvent{Type: "tool_call.started", EventPosition: EventPosition{Turn: 1, Step: 1, Attempt: 1, Answer: 1},
		CallID: "c0", Name: "refund", Arguments: []byte(`{"amount":40}`)}, got[0].Data.(StreamEvent).data)
	require.Equal(t, AttemptRetractedEvent{Type: "attempt.retracted", EventPosition: EventPosition{Turn: 1, Step: 1, Attempt: 1, Answer: 1}, Reason: "retried"},
		got[1].Data.(StreamEvent).data, "the withdrawal names the attempt it cuts")
	require.Equal(t, ToolCallFinishedEvent{Type: "tool_call.finished", EventPosition: EventPosition{Turn: 1, Step: 2, Attempt: 1, Answer: 3},
		CallID: "c1", Name: "crm__lookup", Result: "error: down", Error: true}, got[3].Data.(StreamEvent).data)
	require.True(t, got[4].Data.(StreamEvent).data.(TurnTextEvent).Wrapped)
	require.Equal(t, "end", got[5].Data.(StreamEvent).data.(TurnDoneEvent).StopReason)
	require.Equal(t, CodeModelError, got[6].Data.(StreamEvent).data.(TurnErrorEvent).Code)
}

func TestAcceptAsksForEveryEvent(t *testing.T) {
	require.True(t, acceptsAll("text/event-stream; events=all"))
	require.True(t, acceptsAll("application/json, text/event-stream;events=all"))
	require.False(t, acceptsAll("text/event-stream"))
	require.False(t, acceptsAll(""))
}
