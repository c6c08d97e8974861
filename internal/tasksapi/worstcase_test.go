package tasksapi

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/taskdef"
	"github.com/agenttask/agenttask/internal/workflows"
)

// A text task's worst case is one call; a JSON task's three, each sending
// the schema twice and the runtime's instruction, the later ones every
// refused answer and its refusal.
func TestRunWorstCase(t *testing.T) {
	echo, ok := catalog.Builtin().Get("test/echo") // 0.001 units per input token, 0.002 per output token
	require.True(t, ok)
	in := 2000
	d := taskdef.Definition{Model: "test/echo", MaxTokens: 400, Input: taskdef.InputLimits{MaxBytes: &in}}
	const base = 10_119
	// A text answer over the inline budget is asked again (refused, never
	// split: docs/content.md#content-parts): three calls, each after a
	// refusal adding the placeholder and the correction, not the refused
	// answer.
	require.Equal(t, []int64{base, base + longRefusalBytes, base + 2*longRefusalBytes}, callInputs(d, base))
	text := runWorstCase(echo, d, base)
	require.Equal(t, int64(3*base+3*longRefusalBytes), text.InputTokens)
	require.Equal(t, int64(1200), text.OutputTokens)
	require.Equal(t, echo.WorstCase(base, 400).Units+echo.WorstCase(base+longRefusalBytes, 400).Units+echo.WorstCase(base+2*longRefusalBytes, 400).Units, text.Units)

	d.JSON = true
	d.Schema = json.RawMessage(`{"type":"object","properties":{"reply":{"type":"string"}},"required":["reply"]}`)
	s := int64(len(d.Schema))
	first := base + jsonInstructionBytes + 2*s
	refusal := 400 + refusalBytes + 400 + s
	require.Equal(t, []int64{first, first + refusal, first + 2*refusal}, callInputs(d, base))
	w := runWorstCase(echo, d, base)
	require.Equal(t, 3*first+3*refusal, w.InputTokens)
	require.Equal(t, int64(1200), w.OutputTokens)
	var units int64
	for _, c := range callInputs(d, base) {
		units += echo.WorstCase(c, 400).Units
	}
	require.Equal(t, units, w.Units)
	require.Greater(t, w.Units, 3*echo.WorstCase(base, 400).Units-1)
	require.Equal(t, catalog.WorstCase{InputTokens: w.InputTokens, OutputTokens: 1200}, unpricedWorstCase(d, base))
}

func TestAnsweredModel(t *testing.T) {
	require.Equal(t, "openai/gpt-4o-mini-2024-07-18", answeredModel("openai/gpt-4o-mini", "gpt-4o-mini-2024-07-18"))
	require.Equal(t, "test/echo", answeredModel("test/echo", ""), "a turn that names no model: the catalogue's")
}

// A task with capabilities may first make toolRounds calls that ask for
// tools, each sending the tool definitions (an mcp capability's at the
// runtime's bound on listed tools) and the exchange at its bound; its
// answer's calls send them too.
func TestRunWorstCaseCountsToolRounds(t *testing.T) {
	in := 2000
	d := taskdef.Definition{Model: "test/echo", MaxTokens: 400, Input: taskdef.InputLimits{MaxBytes: &in},
		Capabilities: []contract.Capability{{Name: "crm", Kind: contract.CapabilityMCP, Server: "everything"}}}
	const base = 10_119
	calls := callInputs(d, base)
	require.Len(t, calls, toolRounds+jsonCalls, "8 tool rounds, then the answer's calls")
	capBytes, _ := json.Marshal(d.Capabilities[0])
	scratch := int64(workflows.MaxScratchBytes + workflows.MaxActivityResultBytes + toolRounds*(400+contract.MaxCallsPerResponse*toolNoteBytes))
	first := base + int64(len(capBytes)) + activities.MaxMCPToolsBytes + scratch
	for k := range toolRounds {
		require.Equal(t, first, calls[k], "tool round %d", k+1)
	}
	require.Equal(t, []int64{first, first + longRefusalBytes, first + 2*longRefusalBytes}, calls[toolRounds:])
	w := unpricedWorstCase(d, base)
	require.Equal(t, int64((toolRounds+jsonCalls)*400), w.OutputTokens)

	d.Capabilities = []contract.Capability{{Name: "refund", Kind: contract.CapabilityActivity, Activity: "Refund", TaskQueue: "payments"}}
	capBytes, _ = json.Marshal(d.Capabilities[0])
	require.Equal(t, base+int64(len(capBytes))+scratch, callInputs(d, base)[0], "no mcp capability: no listed tools")
}
