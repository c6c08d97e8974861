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

// TestReplayRecordedHistories replays every history recorded from real runs
// (testdata/histories, written by the integration tests with
// AGENT_RECORD_HISTORIES set). A change to the workflow that would break a
// running task fails here with a non-determinism error.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "histories", "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 7, "the recorded histories are missing")
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
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
	f := filepath.Join("..", "testdata", "histories", "single.json")
	_, err := os.Stat(f)
	require.NoError(t, err)
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, _ any) error {
		return workflow.Sleep(ctx, 0) // not what the history recorded
	}, workflow.RegisterOptions{Name: WorkflowType})
	require.Error(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
}
