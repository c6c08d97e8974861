package tasksapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/taskdef"
)

// A stored task's capabilities are checked at creation by the runtime's
// rules for an agent, the fault named by its field; an mcp capability
// must name a server the workers list when the API knows them.
func TestStoredCapabilitiesAreCheckedAsAnAgents(t *testing.T) {
	d := taskdef.Definition{Name: "support", Model: "test/echo", MaxTokens: 400}
	fieldOf := func(err error) (string, string) {
		var p *Problem
		require.True(t, errors.As(err, &p), "%v", err)
		return p.Field, p.Detail
	}
	s := &server{}
	d.Capabilities = []contract.Capability{{Name: "refund", Kind: contract.CapabilityActivity, Activity: "IssueRefund", TaskQueue: "payments"}}
	require.NoError(t, s.checkCapabilities(d))

	d.Capabilities[0].Activity = "CallMCPTool"
	field, msg := fieldOf(s.checkCapabilities(d))
	require.Equal(t, "capabilities[0].activity", field)
	require.Contains(t, msg, "one of the runtime's own activities")

	d.Capabilities = []contract.Capability{{Name: "crm", Kind: contract.CapabilityMCP, Server: "crm"}}
	require.NoError(t, s.checkCapabilities(d), "servers not known here: the worker decides")
	s.cfg.MCPServers = []string{"everything"}
	field, msg = fieldOf(s.checkCapabilities(d))
	require.Equal(t, "capabilities[0].server", field)
	require.Contains(t, msg, "everything")
	d.Capabilities[0].Server = "everything"
	require.NoError(t, s.checkCapabilities(d))
}
