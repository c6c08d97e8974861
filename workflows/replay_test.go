package workflows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayRecordedHistories replays every history recorded from real runs,
// every generation of them (testdata/histories/genN, written by the
// integration tests with AGENT_RECORD_HISTORIES set; a generation is never
// rewritten, new recordings go to a new one). A change to the workflow that
// would break a task running on any earlier version fails here with a
// non-determinism error.
func TestReplayRecordedHistories(t *testing.T) {
	gens, err := filepath.Glob(filepath.Join("..", "testdata", "histories", "gen*"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(gens), 3, "the recorded generations are missing")
	files, err := filepath.Glob(filepath.Join("..", "testdata", "histories", "gen*", "*.json"))
	require.NoError(t, err)
	for _, g := range gens {
		n, _ := filepath.Glob(filepath.Join(g, "*.json"))
		require.GreaterOrEqual(t, len(n), 7, "generation %s lost its histories", g)
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			wf := &Workflows{}
			r.RegisterWorkflowWithOptions(wf.AgentTask, workflow.RegisterOptions{Name: WorkflowType})
			id, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".id")
			require.NoError(t, err, "the recorded workflow ID")
			data, err := os.Open(f)
			require.NoError(t, err)
			defer data.Close()
			h, err := client.HistoryFromJSON(data, client.HistoryJSONOptions{})
			require.NoError(t, err)
			require.NoError(t, r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: string(id)},
			}))
		})
	}
}

// TestReplayDetectsAChangedWorkflow shows the replay test can fail: a
// workflow that schedules its activity differently does not replay.
func TestReplayDetectsAChangedWorkflow(t *testing.T) {
	f := filepath.Join("..", "testdata", "histories", "gen1", "single.json")
	_, err := os.Stat(f)
	require.NoError(t, err)
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, _ any) error {
		return workflow.Sleep(ctx, 0) // not what the history recorded
	}, workflow.RegisterOptions{Name: WorkflowType})
	require.Error(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
}
