package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// chain is an agent tree n agents deep: each delegates to the next.
func chain(n int) contract.AgentSpec {
	a := agentSpec()
	if n > 1 {
		sub := chain(n - 1)
		a.Capabilities = []contract.Capability{{Name: "next", Kind: contract.CapabilityDelegate, Agent: &sub}}
	}
	return a
}

// A tree's depth counts its agents on the longest delegate path, the
// task's own included, and names the deepest.
func TestTreeDepth(t *testing.T) {
	d, p := treeDepth("agent", chain(1))
	require.Equal(t, 1, d)
	require.Equal(t, "agent", p)
	d, p = treeDepth("agent", chain(3))
	require.Equal(t, 3, d)
	require.Equal(t, "agent.capabilities[0].agent.capabilities[0].agent", p)
}

// A delegated agent may delegate from rules 18 on; a tree deeper than the
// worker's bound (3 by default, AGENT_MAX_AGENT_DEPTH) is refused at the
// root's start, naming the deepest agent; no model is called.
func TestATreeDeeperThanTheWorkersBoundIsRefusedAtStart(t *testing.T) {
	_, err := checkAgent("agent", chain(3), rulesFor(rulesClientTools))
	require.ErrorContains(t, err, "agent.capabilities[0].agent.capabilities: a delegated agent cannot delegate further in this version")
	_, err = checkAgent("agent", chain(contract.MaxAgentDepth+1), rulesFor(rulesLatest))
	require.ErrorContains(t, err, "more than the 8 any worker runs")

	m := &fakeModel{}
	env := newEnv(t, m)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: chain(4), Input: textInput("hi"), Mode: contract.ModeSingle}})
	err = env.GetWorkflowError()
	require.Equal(t, contract.ErrInvalidInput, appErrorType(t, err))
	require.Contains(t, err.Error(), "agent.capabilities[0].agent.capabilities[0].agent.capabilities[0].agent: the agent tree is 4 agents deep (this task's agent included), more than the 3 this worker's operator allows (AGENT_MAX_AGENT_DEPTH)")
	require.Empty(t, m.calls)

	require.NoError(t, SetMaxAgentDepth(4))
	defer maxDepth.Store(0)
	require.Error(t, SetMaxAgentDepth(contract.MaxAgentDepth+1))
	m = &fakeModel{}
	env = newEnv(t, m)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: chain(4), Input: textInput("hi"), Mode: contract.ModeSingle}})
	require.NotContains(t, errString(env.GetWorkflowError()), "agents deep", "within the operator's bound")
}

// A report lists a sub-task's pending approvals under its delegate call's
// path, and a path finds the sub-task to route a decision to.
func TestTreeStateListsApprovalsByPath(t *testing.T) {
	var s treeState
	s.started("root.research.t1.c0", "t1.c1")
	require.True(t, s.take(subTaskReport{Child: "root.research.t1.c0", Approvals: []contract.Approval{
		{ID: "t1.c2/t1.c1", Capability: "refund", TaskID: "root.research.t1.c0.review.t1.c1"},
		{ID: "t2.c1", Capability: "mail"}}}))
	require.False(t, s.take(subTaskReport{Child: "someone.else"}), "a report of a task not running here is dropped")
	got := s.pending()
	require.Len(t, got, 2)
	require.Equal(t, "t1.c1/t1.c2/t1.c1", got[0].ID)
	require.Equal(t, "root.research.t1.c0.review.t1.c1", got[0].TaskID)
	require.Equal(t, "t1.c1/t2.c1", got[1].ID)
	require.Equal(t, "root.research.t1.c0", got[1].TaskID)
	a, child, rest := s.find("t1.c1/t1.c2/t1.c1")
	require.NotNil(t, a)
	require.Equal(t, "root.research.t1.c0", child)
	require.Equal(t, "t1.c2/t1.c1", rest)
	a, _, _ = s.find("t9.c9/t1.c1")
	require.Nil(t, a)
	s.ended("root.research.t1.c0")
	require.Empty(t, s.pending())
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
