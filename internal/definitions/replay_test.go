package definitions

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/internal/histories"
)

// TestReplayRecordedHistories replays the store's recorded histories (every
// generation under testdata/histories, recorded by the Tasks API's
// integration tests): a change to these workflows that would break a
// running entity fails here.
func TestReplayRecordedHistories(t *testing.T) {
	gens, err := histories.Generations()
	require.NoError(t, err)
	types := []string{IndexWorkflow, TaskWorkflow, PromptWorkflow, PromptVersionWorkflow}
	for _, typ := range types {
		files, err := histories.Of(gens, typ)
		require.NoError(t, err)
		require.NotEmpty(t, files, "a recorded history of %s", typ)
	}
	files, err := histories.Of(gens, types...)
	require.NoError(t, err)
	for _, f := range files {
		t.Run(histories.Name(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			Register(r)
			require.NoError(t, histories.Replay(r, f))
		})
	}
}
