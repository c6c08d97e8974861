package tasksapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// An AG-UI run's frontend tools become client capabilities of the run's
// agent, after the task's own; a tool the runtime cannot offer is refused
// naming it (tools[i]...), never the agent's capability it would be.
func TestFrontendToolsBecomeClientCapabilities(t *testing.T) {
	agent := contract.AgentSpec{Name: "a", Model: "test/echo", Capabilities: []contract.Capability{
		{Name: "lookup", Kind: contract.CapabilityActivity, Activity: "Lookup", TaskQueue: "q"}}}
	got, err := withClientTools(agent, []aguiTool{{Name: "locate", Description: "Where the user is",
		Parameters: json.RawMessage(`{"type":"object","properties":{"precise":{"type":"boolean"}}}`)}})
	require.NoError(t, err)
	require.Len(t, got.Capabilities, 2)
	require.Len(t, agent.Capabilities, 1, "the stored agent is not changed")
	require.Equal(t, contract.Capability{Name: "locate", Kind: contract.CapabilityClient, Description: "Where the user is",
		Parameters: json.RawMessage(`{"type":"object","properties":{"precise":{"type":"boolean"}}}`)}, got.Capabilities[1])

	many := make([]aguiTool, maxAGUITools+1)
	for i := range many {
		many[i].Name = "t" + strings.Repeat("x", i)
	}
	for _, c := range []struct {
		tools []aguiTool
		field string
	}{
		{[]aguiTool{{Name: "lookup"}}, "tools[0].name"},
		{[]aguiTool{{Name: "ok"}, {Name: "has space"}}, "tools[1].name"},
		{[]aguiTool{{Name: "zip", Parameters: json.RawMessage(`{"type":"object","properties":{"z":{"type":"string","format":"email"}}}`)}}, "tools[0].parameters.properties.z.format"},
		{[]aguiTool{{Name: "d", Description: strings.Repeat("x", maxToolDescriptionBytes+1)}}, "tools[0].description"},
		{many, "tools"},
	} {
		_, err := withClientTools(agent, c.tools)
		var p *Problem
		require.ErrorAs(t, err, &p, "%v", c.tools)
		require.Equal(t, c.field, p.Field, "%s", p.Detail)
	}
}
