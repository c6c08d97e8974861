package workflows

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// An activity capability may not name the runtime's own activities or
// (rulesBudgets only) its task queue; older rules accepted both and still
// do, and rulesMCP accepts the task's own queue (a team's worker hosting the
// runtime through the plugin runs its activities there).
func TestActivityCapabilitiesStayOffTheRuntime(t *testing.T) {
	spec := func(activity, queue string) contract.AgentSpec {
		return contract.AgentSpec{Name: "a", Model: "test/echo", Capabilities: []contract.Capability{{
			Name: "c", Kind: contract.CapabilityActivity, Activity: activity, TaskQueue: queue}}}
	}
	for _, tc := range []struct {
		activity, queue, want string
		since                 rules // the first rules that refuse it
		until                 *rules
	}{
		{"StashGet", "", `"StashGet" is one of the runtime's own activities`, rulesFor(rulesBudgets), nil},
		{"CopyFiles", "payments", `"CopyFiles" is one of the runtime's own activities`, rulesFor(rulesBudgets), nil},
		{"CallMCPTool", "payments", `"CallMCPTool" is one of the runtime's own activities`, rulesFor(rulesMCP), nil},
		{"agenttask.Ask", "payments", `"agenttask.Ask" is one of the runtime's own activities`, rulesFor(rulesMCP), nil},
		{"IssueRefund", "", "agent.capabilities[0].taskQueue: required", rulesFor(rulesBudgets), &latestRules},
		{"IssueRefund", contract.DefaultTaskQueue, `"agent-tasks" is the runtime's own task queue`, rulesFor(rulesBudgets), &latestRules},
	} {
		_, err := checkAgent("agent", spec(tc.activity, tc.queue), tc.since)
		require.ErrorContains(t, err, tc.want)
		require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err))
		_, err = checkAgent("agent", spec(tc.activity, tc.queue), rulesFor(rulesBudgets-1))
		require.NoError(t, err, "older rules accepted it: running tasks replay")
		if tc.until != nil {
			_, err = checkAgent("agent", spec(tc.activity, tc.queue), *tc.until)
			require.NoError(t, err, "rulesMCP runs it on the task's own queue")
		} else {
			_, err = checkAgent("agent", spec(tc.activity, tc.queue), latestRules)
			require.ErrorContains(t, err, tc.want)
		}
	}
	_, err := checkAgent("agent", spec("IssueRefund", "payments"), rulesFor(rulesLatest))
	require.NoError(t, err)
	require.ErrorContains(t, checkTaskQueue(spec("IssueRefund", "my-queue"), "my-queue", rulesFor(rulesBudgets)), `"my-queue" is the runtime's own task queue`)
	require.NoError(t, checkTaskQueue(spec("IssueRefund", "payments"), "my-queue", rulesFor(rulesBudgets)))
}

// A capability's startTimeout and timeout are checked and defaulted.
func TestActivityCapabilityBounds(t *testing.T) {
	c := contract.Capability{Name: "c", Kind: contract.CapabilityActivity, Activity: "IssueRefund", TaskQueue: "payments"}
	require.Equal(t, contract.DefaultCapabilityStart, c.StartWait())
	require.Equal(t, contract.DefaultCapabilityCall, c.CallWait())
	bad := c
	bad.StartTimeout = "soon"
	_, err := checkAgent("agent", contract.AgentSpec{Name: "a", Model: "test/echo", Capabilities: []contract.Capability{bad}}, rulesFor(rulesLatest))
	require.ErrorContains(t, err, "agent.capabilities[0].startTimeout")
	short := c
	short.StartToCloseTimeout, short.CallTimeout = "2m", "1m"
	_, err = checkAgent("agent", contract.AgentSpec{Name: "a", Model: "test/echo", Capabilities: []contract.Capability{short}}, rulesFor(rulesLatest))
	require.ErrorContains(t, err, "agent.capabilities[0].timeout: 1m is shorter than one attempt's startToCloseTimeout (2m)")
}

// History entries follow docs/contract.md's rules 5 and 6 and docs/content.md's inline
// budget: refused, never split, under rulesBudgets.
func TestHistoryEntriesFollowTheSeedRules(t *testing.T) {
	start := func(agent contract.AgentSpec, h ...contract.HistoryMessage) error {
		_, err := checkStart(&StartArgs{StartArgs: contract.StartArgs{Agent: agent, History: h}}, rulesFor(rulesLatest))
		return err
	}
	plain := contract.AgentSpec{Name: "a", Model: "test/echo"}
	require.NoError(t, start(plain, contract.HistoryMessage{Role: "user", Content: "hi"}, contract.HistoryMessage{Role: "assistant", Content: "hello"}))
	big := strings.Repeat("x", contract.MaxInlineTextBytes+1)
	require.ErrorContains(t, start(plain, contract.HistoryMessage{Role: "user", Content: big}), "history[0].content: 100001 bytes is over the 100000-byte inline budget")
	_, err := checkStart(&StartArgs{StartArgs: contract.StartArgs{Agent: plain, History: []contract.HistoryMessage{{Role: "user", Content: big}}}}, rulesFor(rulesBudgets-1))
	require.NoError(t, err, "older rules accepted it")

	params := plain
	params.Parameters = []byte(`{"type":"object","required":["ticket_id"],"properties":{"ticket_id":{"type":"string"}}}`)
	require.ErrorContains(t, start(params, contract.HistoryMessage{Role: "user", Content: "hi"}), "require the parameters ticket_id")
	require.NoError(t, start(params, contract.HistoryMessage{Role: "assistant", Content: "hello"}), "an output carries no parameters")

	exposes := plain
	exposes.Exposes = []byte(`{"type":"object","properties":{"summary":{"type":"string"}}}`)
	require.ErrorContains(t, start(exposes, contract.HistoryMessage{Role: "assistant", Content: "hello"}), "carries its exposes keys summary")
	require.NoError(t, start(exposes, contract.HistoryMessage{Role: "user", Content: "hi"}))
}
