package a2apush

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/agenttask/agenttask/internal/a2a"
)

// The follow posts each change once to every configuration (the state at
// the time it was set first), artifacts before the final status; a deleted
// configuration gets nothing more; the follow ends with the task.
func TestWorkflowPostsEachChangeOnce(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var ended bool // the task completes at 5 s
	var mu sync.Mutex
	posts := map[string][]string{}
	answer := "done"
	acts := &Activities{
		Read: func(context.Context, string) (a2a.Task, error) {
			mu.Lock()
			st := a2a.StateWorking
			if ended {
				st = a2a.StateCompleted
			}
			mu.Unlock()
			t := a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.Status{State: st}}
			if st == a2a.StateCompleted {
				t.Artifacts = []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart(answer)}}}
			}
			return t, nil
		},
	}
	env.RegisterWorkflowWithOptions(Workflow, workflowOptions())
	env.RegisterActivityWithOptions(acts.ReadTask, activityOptions(ReadTaskName))
	env.RegisterActivityWithOptions(func(_ context.Context, in SendInput) error {
		mu.Lock()
		defer mu.Unlock()
		var kind map[string]json.RawMessage
		_ = json.Unmarshal(in.Body, &kind)
		for k, v := range kind {
			what := k
			if k == "statusUpdate" {
				what += ":" + strings.Split(strings.Split(string(v), `"state":"`)[1], `"`)[0]
			}
			posts[in.Config.ID] = append(posts[in.Config.ID], what)
		}
		return nil
	}, activityOptions(SendName))
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalSet, Config{ID: "late", TaskID: "t1", URL: "https://example.com/late"})
	}, 3*time.Second)
	env.RegisterDelayedCallback(func() { mu.Lock(); ended = true; mu.Unlock() }, 5*time.Second)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalSet, Config{ID: "gone", TaskID: "t1", URL: "https://example.com/gone"})
	}, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalDelete, "gone") }, 1500*time.Millisecond)
	env.ExecuteWorkflow(WorkflowName, State{TaskID: "t1", Configs: []Followed{{Config: Config{ID: "first", TaskID: "t1", URL: "https://example.com/first"}}}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"statusUpdate:TASK_STATE_WORKING", "artifactUpdate", "statusUpdate:TASK_STATE_COMPLETED"}, posts["first"])
	require.Equal(t, []string{"statusUpdate:TASK_STATE_WORKING"}, posts["gone"][:1], "set, sent the state, then deleted")
	require.Len(t, posts["gone"], 1)
	require.Equal(t, []string{"statusUpdate:TASK_STATE_WORKING", "artifactUpdate", "statusUpdate:TASK_STATE_COMPLETED"}, posts["late"])
}
