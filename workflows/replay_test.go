package workflows

import (
	"encoding/json"
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
		require.GreaterOrEqual(t, len(agentTaskHistories(t, n)), 7, "generation %s lost its histories", g)
	}
	files = agentTaskHistories(t, files)
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

// agentTaskHistories keeps the histories of AgentTask runs (the Tasks API's
// store workflows replay in package definitions).
func agentTaskHistories(t *testing.T, files []string) []string {
	var out []string
	for _, f := range files {
		if historyType(t, f) == WorkflowType {
			out = append(out, f)
		}
	}
	return out
}

// historyType is the workflow type a recorded history starts.
func historyType(t *testing.T, file string) string {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var h struct {
		Events []struct {
			Started *struct {
				WorkflowType struct {
					Name string `json:"name"`
				} `json:"workflowType"`
			} `json:"workflowExecutionStartedEventAttributes"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal(data, &h), file)
	require.NotEmpty(t, h.Events, file)
	require.NotNil(t, h.Events[0].Started, file)
	return h.Events[0].Started.WorkflowType.Name
}
