package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// Inputs sent while a turn is in flight are queued (no committed_at: the
// read receipt), then committed together by the next model call, which comes
// after the running turn's output.
func TestInputsDuringATurnAreQueuedThenCommittedTogether(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "queued"
	h.model.Hold()
	run := startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("first")})
	require.NoError(t, h.model.WaitForCalls(ctxT(t, time.Minute), 1))

	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("second")))
	// The update goes once the signal is queued: a signal and an update that
	// land in one workflow task may be taken in either order (one instant).
	eventually(t, time.Minute, "the signal queued", func() bool { return status(t, id).Queued == 1 })
	res, err := sendUpdate(t, id, text("third"))
	require.NoError(t, err)
	eventually(t, time.Minute, "two queued inputs", func() bool { return status(t, id).Queued == 2 })
	during := messages(t, id, nil)
	require.Len(t, during, 3)
	require.NotEmpty(t, during[0].CommittedAt)
	require.Empty(t, during[1].CommittedAt, "received, not yet shown to the model")
	require.Empty(t, during[2].CommittedAt)
	require.Equal(t, res.ReceivedAt, during[2].ReceivedAt)
	requireSeedOrder(t, during)

	h.model.Release()
	waitOutputs(t, id, 2)
	msgs := messages(t, id, nil)
	require.Len(t, msgs, 5)
	require.Equal(t, []string{"input", "output", "input", "input", "output"}, types(msgs))
	require.Equal(t, msgs[2].CommittedAt, msgs[3].CommittedAt, "one model call commits every queued input")
	require.True(t, mustTime(t, msgs[2].ReceivedAt).Before(mustTime(t, msgs[1].CommittedAt)),
		"sent before output 1, listed after it: commit order is not send order")
	requireSeedOrder(t, msgs)
	require.Equal(t, 2, h.model.CallCount(), "two turns, two model calls")
	// The second call showed the model both queued inputs after output 1.
	second := h.model.Calls()[1].Messages
	require.Equal(t, "second", second[len(second)-2].Content)
	require.Equal(t, "third", second[len(second)-1].Content)

	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	var result contract.Result
	require.NoError(t, run.Get(ctxT(t, 30*time.Second), &result))
	require.Equal(t, 2, result.Turns)
	require.Contains(t, joinText(contract.Message{TaskIO: *result.LastOutput}), "second")
}

func types(ms []contract.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Type
	}
	return out
}
