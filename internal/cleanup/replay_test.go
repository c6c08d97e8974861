package cleanup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/internal/histories"
)

// firstCleanupGen is the first generation recorded with DeleteTask and
// RetentionSweep (docs/design.md#deletion, #retention); every later one
// must hold both.
const firstCleanupGen = 11

// replayRegistry lets Register and RegisterRetention register on a
// replayer, which runs no activities: the workflows are registered exactly
// as a worker registers them, the activities are dropped.
type replayRegistry struct{ worker.WorkflowReplayer }

func (replayRegistry) RegisterActivityWithOptions(any, activity.RegisterOptions) {}

// newReplayer has the package's workflows under their API names.
func newReplayer() worker.WorkflowReplayer {
	r := worker.NewWorkflowReplayer()
	Register(replayRegistry{r}, &Activities{})
	RegisterRetention(replayRegistry{r}, &Sweeper{})
	return r
}

// TestReplayRecordedHistories replays every recorded DeleteTask and
// RetentionSweep history of every generation (testdata/histories/genN,
// recorded by the delete and retention integration tests): a change to
// these workflows that would break a deletion or a sweep in flight fails
// here with a non-determinism error.
func TestReplayRecordedHistories(t *testing.T) {
	gens, err := histories.Generations()
	require.NoError(t, err)
	checked := 0
	for _, g := range gens {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(g), "gen"))
		require.NoError(t, err, "generation folder %s", g)
		if n < firstCleanupGen {
			continue
		}
		checked++
		for _, typ := range []string{DeleteTaskName, RetentionSweepName} {
			files, err := histories.Of([]string{g}, typ)
			require.NoError(t, err)
			require.NotEmpty(t, files, "generation %s holds no recorded history of %s", g, typ)
		}
	}
	require.Positive(t, checked, "no generation from gen%d on: the recorded histories of DeleteTask and RetentionSweep are missing", firstCleanupGen)
	files, err := histories.Of(gens, DeleteTaskName, RetentionSweepName)
	require.NoError(t, err)
	for _, f := range files {
		t.Run(histories.Name(f), func(t *testing.T) {
			require.NoError(t, histories.Replay(newReplayer(), f))
		})
	}
}

// TestReplayDetectsAChangedDeleteTask shows the replay test can fail: a
// DeleteTask that issues another first command does not replay.
func TestReplayDetectsAChangedDeleteTask(t *testing.T) {
	f := filepath.Join("..", "..", "testdata", "histories", "gen11", "delete-task-api-run.json")
	_, err := os.Stat(f)
	require.NoError(t, err)
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, _ TaskInput) (DeleteResult, error) {
		return DeleteResult{}, workflow.Sleep(ctx, 0) // not what the history recorded
	}, workflow.RegisterOptions{Name: DeleteTaskName})
	require.Error(t, histories.Replay(r, f))
}
