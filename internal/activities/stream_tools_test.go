package activities

import (
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
