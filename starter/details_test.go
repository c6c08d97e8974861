package starter

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

func TestDetailsNameTheAgent(t *testing.T) {
	args := contract.StartArgs{Mode: contract.ModeSingle, Agent: contract.AgentSpec{Name: "support", Model: "test/echo",
		Instructions: "  Help the customer of {{shop}}.\nNever promise refunds.",
		Mount:        &contract.MountSpec{Root: "task", Name: "files"},
		Capabilities: []contract.Capability{
			{Name: "refund", Kind: contract.CapabilityActivity, Activity: "IssueRefund", TaskQueue: "payments"},
			{Name: "ask", Kind: contract.CapabilityDelegate, Agent: &contract.AgentSpec{Name: "expert", Model: "test/other"}},
		}},
		Budget: &contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(500)}}}
	d := Details(args)
	for _, want := range []string{"**agent** support · **model** test/echo · **mode** single",
		"**instructions** Help the customer of {{shop}}.", "refund (activity IssueRefund), ask (delegate to expert, test/other)",
		"**mount** task:// on files", "**budget** 500 units · on exhausted: wait"} {
		require.Contains(t, d, want)
	}
	require.NotContains(t, d, "Never promise", "only the first line")

	long := Details(contract.StartArgs{Agent: contract.AgentSpec{Name: "a", Model: "t/m", Instructions: strings.Repeat("é", 200)}})
	require.Contains(t, long, "…")
	require.NotContains(t, long, "**capabilities**")
	require.LessOrEqual(t, len(long), 250)
}
