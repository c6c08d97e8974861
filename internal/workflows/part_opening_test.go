package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// The start values to keep by reference are handed over once, in the
// order they were noted.
func TestTheLargeStartValuesAreHandedOverOnce(t *testing.T) {
	var o opening
	require.Empty(t, o.takeLargeValues())
	o.keepLarge("report")
	o.keepLarge("table")
	require.Equal(t, []string{"report", "table"}, o.takeLargeValues())
	require.Empty(t, o.takeLargeValues(), "taken already")
	o.keepLarge("later")
	require.Equal(t, []string{"later"}, o.takeLargeValues())
}

// The conversation whose files to copy is handed over once.
func TestTheCarriedConversationIsHandedOverOnce(t *testing.T) {
	var o opening
	require.Nil(t, o.takeCarrying())
	from := &contract.ContinueFrom{TaskID: "earlier", FirstRunID: "r1", Length: 4}
	o.carry(from)
	require.Same(t, from, o.takeCarrying())
	require.Nil(t, o.takeCarrying())
}

// A run restoring state stored by reference says so, and names it, until
// the state is read back.
func TestOpeningRestoresStoredStateUntilItIsReadBack(t *testing.T) {
	var fresh opening
	require.False(t, fresh.restoring())

	ref := activities.StashRef{Name: "carry-2.1", Parts: 3, Bytes: 300 << 10}
	o := opening{restore: &ref}
	require.True(t, o.restoring())
	require.Equal(t, ref, o.restoreRef())
	o.restored()
	require.False(t, o.restoring())
}

// The worker's configuration is unknown until DescribeWorker ran.
func TestOpeningLearnsTheWorkersConfiguration(t *testing.T) {
	var o opening
	require.Nil(t, o.knownWorker())
	d := &activities.WorkerDescription{OutputModel: "m", Mounts: map[string]string{"docs": "s3://docs"}}
	o.learnWorker(d)
	require.Same(t, d, o.knownWorker())
}
