package workflows

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/histories"
)

// TestReplayRecordedHistories replays every history recorded from real runs,
// every generation of them (testdata/histories/genN, written by the
// integration tests with AGENT_RECORD_HISTORIES set; a generation is never
// rewritten, new recordings go to a new one). A change to the workflow that
// would break a task running on any earlier version fails here with a
// non-determinism error.
func TestReplayRecordedHistories(t *testing.T) {
	gens, err := histories.Generations()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(gens), 3, "the recorded generations are missing")
	for _, g := range gens {
		n, err := histories.Of([]string{g}, contract.WorkflowType)
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(n), 7, "generation %s lost its histories", g)
	}
	files, err := histories.Of(gens, contract.WorkflowType) // the store's workflows replay in package definitions
	require.NoError(t, err)
	for _, f := range files {
		t.Run(histories.Name(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			wf := &Workflows{}
			r.RegisterWorkflowWithOptions(wf.AgentTask, workflow.RegisterOptions{Name: contract.WorkflowType})
			require.NoError(t, histories.Replay(r, f))
		})
	}
}

// TestReplayDetectsAChangedWorkflow shows the replay test can fail: a
// workflow that schedules its activity differently does not replay.
func TestReplayDetectsAChangedWorkflow(t *testing.T) {
	f := filepath.Join("..", "..", "testdata", "histories", "gen1", "single.json")
	_, err := os.Stat(f)
	require.NoError(t, err)
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, _ any) error {
		return workflow.Sleep(ctx, 0) // not what the history recorded
	}, workflow.RegisterOptions{Name: contract.WorkflowType})
	require.Error(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
}

// TestBudgetHistoriesRecorded: from gen12 (rules version 12) on, a
// generation holds a budget's raise-budget update and its BUDGET_EXCEEDED
// failure, so the budget's commands replay in every later make test.
func TestBudgetHistoriesRecorded(t *testing.T) {
	gens, err := histories.Generations()
	require.NoError(t, err)
	seen := 0
	for _, g := range gens {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(g), "gen%d", &n); err != nil || n < 12 {
			continue
		}
		seen++
		files, err := histories.Of([]string{g}, contract.WorkflowType)
		require.NoError(t, err)
		var raise, exceeded bool
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			raise = raise || strings.Contains(string(b), `"`+contract.UpdateRaiseBudget+`"`)
			exceeded = exceeded || strings.Contains(string(b), contract.ErrBudgetExceeded)
		}
		require.True(t, raise, "generation %s holds no raise-budget update", g)
		require.True(t, exceeded, "generation %s holds no BUDGET_EXCEEDED failure", g)
	}
	require.Positive(t, seen, "no generation from gen12 on")
}

// TestClientCapabilityHistoriesRecorded: from gen17 (rules version 17) on,
// a generation holds a client capability's call answered with its result
// and one refused.
func TestClientCapabilityHistoriesRecorded(t *testing.T) {
	gens, err := histories.Generations()
	require.NoError(t, err)
	seen := 0
	for _, g := range gens {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(g), "gen%d", &n); err != nil || n < 17 {
			continue
		}
		seen++
		f, err := os.Open(filepath.Join(g, "approval-client-capability.json"))
		require.NoError(t, err, "generation %s", g)
		h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
		f.Close()
		require.NoError(t, err)
		var results, refusals int
		for _, e := range h.GetEvents() {
			in := e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput()
			if in.GetName() != contract.UpdateDecide {
				continue
			}
			var d contract.DecideArgs
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(in.GetArgs(), &d))
			if d.Result != nil {
				results++
			} else if !*d.Approve {
				refusals++
			}
		}
		require.Equal(t, 1, results, "generation %s: a decide with the client's result", g)
		require.Equal(t, 1, refusals, "generation %s: a client's call refused", g)
	}
	require.Positive(t, seen, "no generation from gen17 on")
}

// TestTreeHistoriesRecorded: from gen18 (rules version 18) on, a generation
// holds an agent tree's three levels: the root took its sub-task's reports
// and routed a decision down, the middle level relayed both, and the
// grandchild applied the routed decision.
func TestTreeHistoriesRecorded(t *testing.T) {
	gens, err := histories.Generations()
	require.NoError(t, err)
	seen := 0
	for _, g := range gens {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(g), "gen%d", &n); err != nil || n < 18 {
			continue
		}
		seen++
		for file, signals := range map[string][]string{
			"delegate-tree.json":            {contract.SignalSubTaskReport},
			"delegate-tree-researcher.json": {contract.SignalSubTaskReport, contract.SignalDecideRouted},
			"delegate-tree-reviewer.json":   {contract.SignalDecideRouted},
		} {
			b, err := os.ReadFile(filepath.Join(g, file))
			require.NoError(t, err, "generation %s", g)
			for _, s := range signals {
				require.Regexp(t, `"signalName":\s*"`+s+`"`, string(b), "generation %s: %s", g, file)
			}
		}
	}
	require.Positive(t, seen, "no generation from gen18 on")
}
