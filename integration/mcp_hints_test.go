package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/mcp/mcptest"
)

// MCP is safe by default (rules version 14): a tool its server annotates
// destructive (delete-note) or leaves without annotations (needs-approval:
// destructive and open-world by the MCP defaults) waits for a person's
// decision; a read-only, closed-world tool (echo) runs at once. A
// capability opts tools out by name with autoApprove.
func TestMCPDestructiveToolsWaitForApprovalUnlessAutoApproved(t *testing.T) {
	h := newHarness(t)
	server := mcptest.New(t)
	startMCPWorker(h, server)
	h.model.SetHandler(mcpModel)

	tools := []string{"delete-note", "needs-approval", "echo"}
	calls := `call everything__delete-note {"note":"n1"}; call everything__needs-approval {"amount":5}; call everything__echo {"message":"meanwhile"}`
	run := startTask(t, h, "mcp-hints", map[string]any{"agent": mcpAgent("everything", map[string]any{"tools": tools}), "input": text(calls)})
	waitPending(t, "mcp-hints", 2)
	eventually(t, 30*time.Second, "the read-only tool ran at once", func() bool { return server.Calls("echo") == 1 })
	require.Equal(t, 0, server.Calls("delete-note"), "a destructive tool waits for a decision")
	require.Equal(t, 0, server.Calls("needs-approval"), "so does one without annotations")
	ap := approvalsOf(t, "mcp-hints")
	require.Len(t, ap, 2)
	for _, a := range ap {
		_, err := decide(t, "mcp-hints", a.ID, true, "fine")
		require.NoError(t, err)
	}
	waitOutputs(t, "mcp-hints", 1)
	require.Equal(t, 1, server.Calls("delete-note"))
	require.Equal(t, 1, server.Calls("needs-approval"))
	require.Contains(t, lastText(t, "mcp-hints"), "Deleted n1.")
	recordHistory(t, "mcp-hints", run.GetRunID(), "mcp-hints-approval")
	closeAndWait(t, "mcp-hints")

	// autoApprove names delete-note: it runs at once; needs-approval still waits.
	startTask(t, h, "mcp-auto", map[string]any{"agent": mcpAgent("everything", map[string]any{"tools": tools, "autoApprove": []string{"delete-note"}}),
		"input": text(calls)})
	waitPending(t, "mcp-auto", 1)
	eventually(t, 30*time.Second, "echo and delete-note ran at once", func() bool {
		return server.Calls("echo") == 2 && server.Calls("delete-note") == 2
	})
	ap = approvalsOf(t, "mcp-auto")
	require.Len(t, ap, 1)
	require.Equal(t, "everything__needs-approval", ap[0].Capability)
	_, err := decide(t, "mcp-auto", ap[0].ID, false, "no")
	require.NoError(t, err)
	waitOutputs(t, "mcp-auto", 1)
	closeAndWait(t, "mcp-auto")

	// "*" approves every tool of the capability.
	startTask(t, h, "mcp-all", map[string]any{"agent": mcpAgent("everything", map[string]any{"tools": tools, "autoApprove": []string{"*"}}),
		"mode": "single", "input": text(calls)})
	require.NoError(t, sdk.GetWorkflow(ctxT(t, time.Minute), "mcp-all", "").Get(ctxT(t, 2*time.Minute), nil))
	require.Empty(t, approvalsOf(t, "mcp-all"))
	require.Equal(t, 3, server.Calls("delete-note"))
	require.Equal(t, 2, server.Calls("needs-approval"))
}
