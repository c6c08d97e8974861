package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/activities"
)

// Each store of a run's state is named for the run and counted from 1.
func TestEachStoreOfTheCarryIsNamedForItsRun(t *testing.T) {
	var c continuing
	require.Equal(t, "carry-3.1", c.nextStore(3))
	require.Equal(t, "carry-3.2", c.nextStore(3))
	require.Equal(t, "carry-4.3", c.nextStore(4), "the count is the run's stores, whatever the run named")
}

// State stored once is found again only for exactly the JSON it holds:
// nothing is stored at first, and a later store replaces the earlier one.
func TestStoredStateIsReusedOnlyForTheSameJSON(t *testing.T) {
	var c continuing
	require.Nil(t, c.storedAs([]byte(`{}`)))
	require.Nil(t, c.storedAs(nil))

	first := activities.StashRef{Name: "carry-1.1", Parts: 1, Bytes: 7, SHA256: "aa"}
	data := []byte(`{"a":1}`)
	c.store(first, data)
	data[6] = '2' // the caller's buffer changes after the store
	ref := c.storedAs([]byte(`{"a":1}`))
	require.NotNil(t, ref)
	require.Equal(t, first, *ref)
	require.Nil(t, c.storedAs([]byte(`{"a":2}`)), "other state is stored again")
	require.Nil(t, c.storedAs([]byte(`{"a":1} `)))

	second := activities.StashRef{Name: "carry-1.2", Parts: 2}
	c.store(second, []byte(`{"a":3}`))
	require.Nil(t, c.storedAs([]byte(`{"a":1}`)), "the earlier store is no longer what is held")
	require.Equal(t, "carry-1.2", c.storedAs([]byte(`{"a":3}`)).Name)
}

// drainedNow records that the signal reader drained the channels.
func TestDrainedNowNotesTheDrain(t *testing.T) {
	var c continuing
	require.False(t, c.drained)
	c.drainedNow()
	require.True(t, c.drained)
}
