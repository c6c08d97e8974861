// Package histories finds the recorded workflow histories under
// testdata/histories/gen* that the replay tests of package workflows
// (AgentTask) and package definitions (the Tasks API's store) replay.
package histories

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Generations lists the generation folders, from any package folder of the
// module: it walks up to the folder that holds go.mod.
func Generations() ([]string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Glob(filepath.Join(dir, "testdata", "histories", "gen*"))
		}
		up := filepath.Dir(dir)
		if up == dir {
			return nil, fmt.Errorf("no go.mod above %s", dir)
		}
		dir = up
	}
}

// Of lists the histories in folders that start a workflow of one of types.
func Of(folders []string, types ...string) ([]string, error) {
	var out []string
	for _, dir := range folders {
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			t, err := WorkflowType(f)
			if err != nil {
				return nil, err
			}
			for _, want := range types {
				if t == want {
					out = append(out, f)
				}
			}
		}
	}
	return out, nil
}

// WorkflowType is the workflow type a recorded history starts.
func WorkflowType(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	var h struct {
		Events []struct {
			Started *struct {
				WorkflowType struct {
					Name string `json:"name"`
				} `json:"workflowType"`
			} `json:"workflowExecutionStartedEventAttributes"`
		} `json:"events"`
	}
	if err := json.Unmarshal(data, &h); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	if len(h.Events) == 0 || h.Events[0].Started == nil {
		return "", fmt.Errorf("%s: the first event does not start a workflow", file)
	}
	return h.Events[0].Started.WorkflowType.Name, nil
}

// Replay replays a recorded history with r, under the workflow ID it was
// recorded with (its .id file: code that derives names from the ID must
// replay under the same one).
func Replay(r worker.WorkflowReplayer, file string) error {
	id, err := os.ReadFile(strings.TrimSuffix(file, ".json") + ".id")
	if err != nil {
		return fmt.Errorf("the recorded workflow ID: %w", err)
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		return err
	}
	return r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: string(id)},
	})
}

// Name is how a replay subtest names a history: genN/name.
func Name(file string) string {
	return filepath.Base(filepath.Dir(file)) + "/" + strings.TrimSuffix(filepath.Base(file), ".json")
}
