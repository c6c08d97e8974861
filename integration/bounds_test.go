package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// The queue holds at most 100 inputs (or 1 MiB) not yet committed: the
// next `send` is refused with QUEUE_FULL and changes nothing, and a signal
// is counted in status.rejected with that type. Once a turn commits the
// queue, inputs are taken again.
func TestQueueFullRefusesInputsUntilATurnCommitsThem(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "queue-full"
	h.model.Hold()
	startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("first")})
	require.NoError(t, h.model.WaitForCalls(ctxT(t, time.Minute), 1))

	for i := range contract.MaxQueuedInputs {
		_, err := sendUpdate(t, id, text("queued "+strings.Repeat("x", i%7)))
		require.NoError(t, err, "input %d", i)
	}
	_, err := sendUpdate(t, id, text("one too many"))
	require.Equal(t, contract.ErrQueueFull, errType(err), "%v", err)
	require.Contains(t, err.Error(), "100 inputs")
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("by signal")))
	eventually(t, time.Minute, "the signal refused", func() bool { return status(t, id).Rejected == 1 })
	st := status(t, id)
	require.Equal(t, contract.MaxQueuedInputs, st.Queued, "nothing was added")
	require.Equal(t, contract.ErrQueueFull, st.LastRejection.Type)

	h.model.Release()
	waitOutputs(t, id, 2)
	_, err = sendUpdate(t, id, text("room again"))
	require.NoError(t, err)
	waitOutputs(t, id, 3)
	require.Len(t, messages(t, id, nil), 1+1+contract.MaxQueuedInputs+1+1+1)
	recordHistory(t, id, "", "queue-full")
}

// The bytes bound: inputs of ~250 KB each, four fit in 1 MiB, the fifth
// is refused.
func TestQueueFullByBytes(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "queue-full-bytes"
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: fmt.Sprintf("read %d messages", len(c.Messages))}
	})
	h.model.Hold()
	startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("first")})
	require.NoError(t, h.model.WaitForCalls(ctxT(t, time.Minute), 1))
	big := func() map[string]any {
		var parts []any
		for _, p := range contract.TextParts(strings.Repeat("y", 250_000)) {
			parts = append(parts, map[string]any{"mimeType": p.MimeType, "text": *p.Text})
		}
		return map[string]any{"message": parts}
	}
	for i := range 4 {
		_, err := sendUpdate(t, id, big())
		require.NoError(t, err, "input %d", i)
	}
	_, err := sendUpdate(t, id, big())
	require.Equal(t, contract.ErrQueueFull, errType(err), "%v", err)
	require.Contains(t, err.Error(), "bytes")
	h.model.Release()
	waitOutputs(t, id, 2)
	// The turn commits the four queued inputs, and shows the model all of
	// them (their committed_at is the read receipt), 1 MB though they are.
	calls := h.model.Calls()
	users := 0
	for _, m := range calls[len(calls)-1].Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, "yyyy") {
			users++
		}
	}
	require.Equal(t, 4, users)
}

// cancel-turn naming a turn cancels only that turn: a late signal meant
// for a turn already answered leaves the running one alone.
func TestStaleCancelTurnIsIgnored(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "stale-cancel"
	startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("one")})
	waitOutputs(t, id, 1)

	h.model.Hold()
	_, err := sendUpdate(t, id, text("two"))
	require.NoError(t, err)
	require.NoError(t, h.model.WaitForCalls(ctxT(t, time.Minute), 2))
	require.NoError(t, h.tasks.CancelTurnOf(ctxT(t, 5*time.Second), id, 1), "a cancel for turn 1, arriving during turn 2")
	time.Sleep(500 * time.Millisecond) // the signal is taken in; the call must go on
	require.Equal(t, 0, h.model.Cancelled(), "turn 2's call was not abandoned")
	h.model.Release()
	st := waitOutputs(t, id, 2)
	require.False(t, st.LastTurn.Canceled)

	h.model.Hold()
	_, err = sendUpdate(t, id, text("three"))
	require.NoError(t, err)
	require.NoError(t, h.model.WaitForCalls(ctxT(t, time.Minute), 3))
	require.NoError(t, h.tasks.CancelTurnOf(ctxT(t, 5*time.Second), id, 3))
	require.NoError(t, h.model.WaitForCancelled(ctxT(t, time.Minute), 1), "the named turn's call is abandoned")
	eventually(t, time.Minute, "turn 3 canceled", func() bool {
		st := status(t, id)
		return st.LastTurn != nil && st.LastTurn.Turn == 3 && st.LastTurn.Canceled
	})
	h.model.Release()
	recordHistory(t, id, "", "stale-cancel-turn")
}

// A task whose state is large still continues as new: 200 KiB of
// variables, 100 collected values and a last output of 100,000 bytes (the
// most one answer may hold inline: a longer one is refused, never split).
func TestLargeStateContinuesAsNew(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "large-state"
	vars := map[string]any{}
	for i := range 50 {
		vars[fmt.Sprintf("v%02d", i)] = strings.Repeat(string(rune('a'+i%26)), 4000) // 50 × 4 KB: 200 KB
	}
	collected := map[string]any{}
	for i := range 100 {
		collected[fmt.Sprintf("c%03d", i)] = fmt.Sprintf("value %d", i)
	}
	long := strings.Repeat("z", contract.MaxInlineTextBytes)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if strings.Contains(c.Messages[len(c.Messages)-1].Content, "long") {
			return testmodel.Reply{Text: long}
		}
		return testmodel.Reply{Text: "short"}
	})
	startTask(t, h, id, map[string]any{"agent": agent("a"), "continueAsNewEvents": 100, "variables": vars, "collected": collected,
		"input": text("long please")})
	waitOutputs(t, id, 1)
	for i := 0; status(t, id).Run == 1; i++ {
		require.Less(t, i, 40, "no continue-as-new after %d more turns", i)
		_, err := sendUpdate(t, id, text(fmt.Sprint("turn ", i)))
		require.NoError(t, err)
		waitOutputs(t, id, i+2)
	}
	st := status(t, id)
	require.Nil(t, st.Error)
	require.GreaterOrEqual(t, st.Run, 2)
	var got []contract.Collected
	v, err := sdk.QueryWorkflow(ctxT(t, 10*time.Second), id, "", contract.QueryCollected)
	require.NoError(t, err)
	require.NoError(t, v.Get(&got))
	require.Len(t, got, 100, "the collected values crossed over")
	msgs := messages(t, id, nil)
	require.Equal(t, long, *msgs[1].Message[0].Text+joinRest(msgs[1].Message[1:]), "the long output is still listed whole")
	recordHistory(t, id, "", "large-state-latest-run")
}

func joinRest(parts []contract.ContentPart) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(*p.Text)
	}
	return b.String()
}
