package definitions

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

// TestReplayRecordedHistories replays the store's recorded histories (every
// generation under testdata/histories, recorded by the Tasks API's
// integration tests): a change to these workflows that would break a
// running entity fails here.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "histories", "gen*", "*.json"))
	require.NoError(t, err)
	store := map[string]bool{IndexWorkflow: true, TaskWorkflow: true, PromptWorkflow: true, PromptVersionWorkflow: true}
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
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
		require.NoError(t, json.Unmarshal(data, &h), f)
		typ := h.Events[0].Started.WorkflowType.Name
		if !store[typ] {
			continue
		}
		seen[typ] = true
		t.Run(filepath.Base(filepath.Dir(f))+"/"+strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			Register(r)
			id, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".id")
			require.NoError(t, err)
			hist, err := client.HistoryFromJSON(strings.NewReader(string(data)), client.HistoryJSONOptions{})
			require.NoError(t, err)
			require.NoError(t, r.ReplayWorkflowHistoryWithOptions(nil, hist, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: string(id)},
			}))
		})
	}
	require.Len(t, seen, len(store), "a history of every store workflow is recorded: %v", seen)
}
