package activities

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
)

// A step's facts are the results of the previous step's calls only, named
// by the calls, summarised to MaxToolSummary, errors marked.
func TestStepFactsAreTheLastRoundsResults(t *testing.T) {
	long := strings.Repeat("é", broker.MaxToolSummary) // 2 bytes each: cut at a rune boundary
	scratch := []ScratchMessage{
		{ToolCalls: []ToolCall{{ID: "a", Name: "old"}}},
		{ToolCallID: "a", Content: "from round one"},
		{ToolCalls: []ToolCall{{ID: "b", Name: "crm__lookup"}, {ID: "c", Name: "refund"}}},
		{ToolCallID: "b", Content: long, Files: []contract.ContentPart{{MimeType: "text/csv"}}},
		{ToolCallID: "c", Content: "error: a person refused this call"},
	}
	facts := stepFacts(scratch)
	if len(facts) != 2 {
		t.Fatalf("facts %+v", facts)
	}
	b, c := facts[0].Tool, facts[1].Tool
	if facts[0].Type != broker.TypeToolCallFinished || b.ID != "b" || b.Name != "crm__lookup" || !b.Truncated || len(b.Result) > broker.MaxToolSummary || !strings.HasPrefix(long, b.Result) || b.Error || len(b.Files) != 1 {
		t.Errorf("first %+v", b)
	}
	if c.Name != "refund" || !c.Error || c.Truncated {
		t.Errorf("second %+v", c)
	}
	if stepFacts(nil) != nil || stepFacts(scratch[:1]) != nil {
		t.Error("a step without results has facts")
	}
}

func TestToolCallEventsKeepArgumentsAsJSON(t *testing.T) {
	got := toolCallEvents([]ToolCall{
		{ID: "1", Name: "a", Arguments: `{"q":"x"}`},
		{ID: "2", Name: "b", Arguments: `not json`},
		{ID: "3", Name: "c", Arguments: `{"big":"` + strings.Repeat("x", maxStreamedArguments) + `"}`},
		{ID: "4", Name: "d"},
	})
	if string(got[0].Arguments) != `{"q":"x"}` || string(got[1].Arguments) != `"not json"` || got[2].Arguments != nil || !got[2].Truncated || got[3].Arguments != nil {
		t.Errorf("%+v", got)
	}
}

// A call's facts come from its input: a sub-task's start on its first
// call, the stamped answers, the inputs it commits (the turn's start on
// step 1, inputs that joined later after), then the last round's results.
func TestCallFactsComeFromTheInput(t *testing.T) {
	input := contract.Message{Type: contract.TypeInput, TaskIO: contract.TaskIO{Message: contract.TextParts("where is my order?"),
		ReceivedAt: "2026-12-07T10:00:00.000000Z", CommittedAt: "2026-12-07T10:00:01.000000Z",
		Values: map[string]json.RawMessage{contract.KeyInputID: json.RawMessage(`"in-1"`)}}}
	in := ModelTurnInput{TurnContext: &TurnContext{TaskID: "run-a.helper.t3.c1"}, Turn: 1, Step: 1,
		Entries: Entries{Write: []PositionedEntry{{Position: 4, Entry: input}}, Stamps: []OutputStamp{{Position: 3, Turn: 2, CommittedAt: "2026-12-07T09:59:00.000000Z"}}}}
	facts := callFacts(in)
	var types []string
	for _, f := range facts {
		types = append(types, f.Type)
	}
	if strings.Join(types, ",") != "subtask.started,turn.committed,turn.started" {
		t.Fatalf("facts %v", types)
	}
	var started broker.TurnInputs
	if err := json.Unmarshal(facts[2].Data, &started); err != nil || len(started.Inputs) != 1 {
		t.Fatalf("%s %v", facts[2].Data, err)
	}
	if c := started.Inputs[0]; c.Position != 4 || c.InputID != "in-1" || c.Text != "where is my order?" || c.CommittedAt == "" || c.ReceivedAt == "" {
		t.Errorf("input %+v", c)
	}
	in.Step, in.Stamps, in.TaskID = 2, nil, "run-a"
	in.Scratch = []ScratchMessage{{ToolCalls: []ToolCall{{ID: "x", Name: "crm"}}}, {ToolCallID: "x", Content: "ok"}}
	facts = callFacts(in)
	if len(facts) != 2 || facts[0].Type != broker.TypeInputsCommitted || facts[1].Type != broker.TypeToolCallFinished {
		t.Errorf("step 2 facts %+v", facts)
	}
}
