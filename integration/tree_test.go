package integration

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mcp"
	"github.com/agenttask/agenttask/internal/mcp/mcptest"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// treeModel scripts the three agents of an agent tree by model: each makes
// its calls first, then answers with their results. Each agent's calls
// report their own input tokens, so the root's budget can be checked to
// the token.
func treeModel(c testmodel.Call) testmodel.Reply {
	ms := c.Messages
	var results []string
	for i := len(ms) - 1; i >= 0 && ms[i].Role == "tool"; i-- {
		results = append([]string{ms[i].Content}, results...)
	}
	reply := func(tokens int, r testmodel.Reply) testmodel.Reply {
		r.PromptTokens, r.CompletionTokens = tokens, 5
		return r
	}
	switch {
	case c.Model == "coordinator" && len(results) == 0:
		return reply(1000, testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "c1", Name: "research", Arguments: `{"message":"look up hello, and have the refund reviewed"}`}}})
	case c.Model == "researcher" && len(results) == 0:
		return reply(100, testmodel.Reply{ToolCalls: []testmodel.ToolCall{
			{ID: "r1", Name: "everything__echo", Arguments: `{"message":"hello"}`},
			{ID: "r2", Name: "review", Arguments: `{"message":"review refund o-9"}`}}})
	case c.Model == "reviewer" && len(results) == 0:
		return reply(10, testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "v1", Name: "refund", Arguments: `{"order_id":"o-9","amount":5}`}}})
	}
	tokens := map[string]int{"coordinator": 1000, "researcher": 100, "reviewer": 10}[c.Model]
	return reply(tokens, testmodel.Reply{Text: c.Model + ": " + strings.Join(results, " | ")})
}

// A three-level tree: a coordinator delegates to a researcher, which calls
// an MCP tool and delegates to a reviewer, whose refund needs a person's
// approval. The approval is listed at the root by its path and decided
// there; the root's budget counts the grandchild's tokens as they are
// spent; a worker killed (SIGKILL) while the tree waits loses nothing.
func TestDelegateTreeOfThreeLevelsIsDecidedAtTheRoot(t *testing.T) {
	h := newHarness(t)
	server := mcptest.New(t)
	queue := startRefundsWorker(t)
	h.model.SetHandler(treeModel)
	env := append(h.workerEnv(), mcp.EnvServers+"=everything="+server.URL())
	first := startProcess(t, workerBinary(t), env, io.Discard)

	reviewer := map[string]any{"name": "reviewer", "model": "test/reviewer", "instructions": "Review.",
		"capabilities": []any{map[string]any{"name": "refund", "kind": "activity", "activity": "IssueRefund", "taskQueue": queue, "approval": "always",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"order_id": map[string]any{"type": "string"}, "amount": map[string]any{"type": "number"}}}}}}
	researcher := map[string]any{"name": "researcher", "model": "test/researcher", "instructions": "Research.",
		"capabilities": []any{
			map[string]any{"name": "everything", "kind": "mcp", "server": "everything", "tools": []string{"echo"}, "autoApprove": []string{"echo"}},
			map[string]any{"name": "review", "kind": "delegate", "agent": reviewer}}}
	coordinator := map[string]any{"name": "coordinator", "model": "test/coordinator", "instructions": "Coordinate.",
		"capabilities": []any{map[string]any{"name": "research", "kind": "delegate", "agent": researcher}}}
	id := "tree"
	run := startTask(t, h, id, map[string]any{"agent": coordinator, "input": text("go"), "mode": "single",
		"budget": map[string]any{"inputTokens": 1_000_000}})

	path := "t1.c1/t1.c2/t1.c1" // research (root's call 1), review (researcher's call 2), refund (reviewer's call 1)
	var pending contract.Approval
	eventually(t, 2*time.Minute, "the reviewer's approval at the root", func() bool {
		for _, a := range approvalsOf(t, id) {
			if a.ID == path && a.Decision == nil {
				pending = a
				return true
			}
		}
		return false
	})
	require.Equal(t, "refund", pending.Capability)
	require.Equal(t, id+".research.t1.c0.review.t1.c1", pending.TaskID)
	require.JSONEq(t, `{"order_id":"o-9","amount":5}`, string(pending.Arguments))
	eventually(t, time.Minute, "the grandchild's tokens counted at the root", func() bool {
		st := status(t, id)
		return st.Budget != nil && st.Budget.Used.InputTokens == 1000+100+10
	})
	require.Equal(t, 1, status(t, id).Approvals, "the tree's pending approval counts at the root")

	// The worker dies while the tree waits; another takes over.
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	startProcess(t, workerBinary(t), env, io.Discard)

	_, err := decide(t, id, "t1.c9/t1.c1", true, "")
	require.Equal(t, contract.ErrApprovalNotFound, errType(err), "%v", err)
	a, err := decide(t, id, path, true, "fine by me")
	require.NoError(t, err)
	require.Equal(t, path, a.ID)
	require.True(t, a.Decision.Approve)

	var res contract.Result
	require.NoError(t, run.Get(ctxT(t, 3*time.Minute), &res))
	answer := *res.LastOutput.Message[0].Text
	require.True(t, strings.HasPrefix(answer, "coordinator: researcher: "), answer)
	require.Contains(t, answer, "Echo: hello")
	require.Contains(t, answer, `reviewer: {"refund_id"`)
	require.Equal(t, 1, server.Calls("echo"))
	require.Equal(t, int64(2*1000+2*100+2*10), res.Budget.Used.InputTokens, "every level's two calls, counted once")
	require.Zero(t, res.Budget.Reserved.InputTokens)
	recordHistory(t, id, "", "delegate-tree")
	recordHistory(t, id+".research.t1.c0", "", "delegate-tree-researcher")
	recordHistory(t, id+".research.t1.c0.review.t1.c1", "", "delegate-tree-reviewer")
}
