package workflows

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// queueTexts are the texts of the messages ms, in order.
func queueTexts(ms []contract.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, *m.Message[0].Text)
	}
	return out
}

// Inputs wait in arrival order; takeQueue hands them all over and empties
// the queue.
func TestTheQueueKeepsInputsInArrivalOrderUntilTaken(t *testing.T) {
	var q queueRecord
	require.Equal(t, 0, q.queued())
	for _, s := range []string{"a", "b", "c"} {
		q.enqueue(*arrivalInput(s, "t"))
	}
	require.Equal(t, 3, q.queued())
	require.Equal(t, []string{"a", "b", "c"}, queueTexts(q.queuedInputs()))
	require.Equal(t, []string{"a", "b", "c"}, queueTexts(q.takeQueue()))
	require.Equal(t, 0, q.queued())
	require.Empty(t, q.takeQueue())
}

// takeFirst hands over only the first queued inputs and leaves the rest,
// in order; taking them all leaves an empty queue.
func TestTakeFirstTakesTheFirstQueuedInputs(t *testing.T) {
	var q queueRecord
	for _, s := range []string{"a", "b", "c"} {
		q.enqueue(*arrivalInput(s, "t"))
	}
	require.Equal(t, []string{"a"}, queueTexts(q.takeFirst(1)))
	require.Equal(t, []string{"b", "c"}, queueTexts(q.queuedInputs()))
	require.Empty(t, q.takeFirst(0))
	require.Equal(t, 2, q.queued())
	require.Equal(t, []string{"b", "c"}, queueTexts(q.takeFirst(2)))
	require.Equal(t, 0, q.queued())
	require.Nil(t, q.queuedInputs())
}

// requeue puts inputs back at the head of the queue, before what arrived
// meanwhile, without aliasing the slice it was given.
func TestRequeuePutsInputsBackAtTheHead(t *testing.T) {
	var q queueRecord
	q.enqueue(*arrivalInput("c", "t"))
	back := []contract.Message{*arrivalInput("a", "t"), *arrivalInput("b", "t")}
	q.requeue(back)
	require.Equal(t, []string{"a", "b", "c"}, queueTexts(q.queuedInputs()))
	back[0] = *arrivalInput("changed", "t")
	require.Equal(t, "a", *q.queuedInputs()[0].Message[0].Text)
	q.requeue(nil)
	require.Equal(t, 3, q.queued())
}

// The queue refuses an input past its room: MaxQueuedInputs waiting, with
// those still in their arrival check counted, or more than MaxQueuedBytes
// in all, the new input's included.
func TestTheQueueRefusesAnInputPastItsRoom(t *testing.T) {
	small := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("hi")}}
	var q queueRecord
	for i := 0; i < contract.MaxQueuedInputs-2; i++ {
		q.enqueue(*arrivalInput(fmt.Sprint(i), "t"))
	}
	checking := arrivalInput("in check", "t")
	require.NoError(t, q.queueRoom(small, nil))
	require.NoError(t, q.queueRoom(small, []*contract.Message{checking}), "one place left")
	err := q.queueRoom(small, []*contract.Message{checking, checking})
	require.Equal(t, contract.ErrQueueFull, contract.TypeOf(err))
	require.Contains(t, err.Error(), fmt.Sprintf("holds %d inputs", contract.MaxQueuedInputs))
	q.enqueue(*arrivalInput("x", "t"))
	q.enqueue(*arrivalInput("y", "t"))
	require.Equal(t, contract.ErrQueueFull, contract.TypeOf(q.queueRoom(small, nil)))

	var bytes queueRecord
	half := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(strings.Repeat("x", contract.MaxQueuedBytes/2))}}
	require.NoError(t, bytes.queueRoom(half, nil))
	bytes.enqueue(contract.Message{Type: contract.TypeInput, TaskIO: half})
	err = bytes.queueRoom(half, nil)
	require.Equal(t, contract.ErrQueueFull, contract.TypeOf(err), "two halves and their JSON are over the bound")
	require.Contains(t, err.Error(), "bytes")
	bytes.takeQueue()
	inCheck := contract.Message{Type: contract.TypeInput, TaskIO: half}
	require.Equal(t, contract.ErrQueueFull, contract.TypeOf(bytes.queueRoom(half, []*contract.Message{&inCheck})), "an input in its check counts")
}

// A repeated ID is seen with its first receipt; IDs are remembered only
// under rules.inputIDs, an empty one never, and one remembered twice keeps
// its first receipt.
func TestARepeatedInputIDIsSeenWithItsFirstReceipt(t *testing.T) {
	var q queueRecord
	_, dup := q.seen("in-1", true)
	require.False(t, dup)
	q.remember("in-1", "t1", true)
	at, dup := q.seen("in-1", true)
	require.True(t, dup)
	require.Equal(t, "t1", at)
	_, dup = q.seen("in-1", false)
	require.False(t, dup, "older rules know no input IDs")

	q.remember("in-1", "t2", true)
	at, _ = q.seen("in-1", true)
	require.Equal(t, "t1", at, "a duplicate ID keeps its first receipt")

	q.remember("", "t3", true)
	q.remember("off", "t4", false)
	_, dup = q.seen("", true)
	require.False(t, dup)
	_, dup = q.seen("off", true)
	require.False(t, dup)
	require.Len(t, q.InputIDs, 1)
}

// A long ID is remembered by its hash, still found by the ID itself.
func TestALongInputIDIsRememberedByItsHash(t *testing.T) {
	long := strings.Repeat("k", contract.MaxInputIDBytes)
	var q queueRecord
	q.remember(long, "t1", true)
	require.True(t, strings.HasPrefix(q.InputIDs[0].ID, "sha256:"))
	at, dup := q.seen(long, true)
	require.True(t, dup)
	require.Equal(t, "t1", at)
	_, dup = q.seen(long[:len(long)-1]+"j", true)
	require.False(t, dup)
	require.Equal(t, "short", idKey("short"))
}

// Past keptInputIDs the oldest IDs are forgotten.
func TestTheQueueForgetsTheOldestIDsPastItsBound(t *testing.T) {
	var q queueRecord
	for i := 0; i <= keptInputIDs; i++ {
		q.remember(fmt.Sprintf("in-%d", i), fmt.Sprint(i), true)
	}
	require.Len(t, q.InputIDs, keptInputIDs)
	_, dup := q.seen("in-0", true)
	require.False(t, dup, "the oldest was dropped")
	at, dup := q.seen(fmt.Sprintf("in-%d", keptInputIDs), true)
	require.True(t, dup)
	require.Equal(t, fmt.Sprint(keptInputIDs), at)
}

// forget drops one ID, refused after it was recorded, so a corrected retry
// is taken; the others stay.
func TestForgetDropsTheIDOfARefusedInput(t *testing.T) {
	var q queueRecord
	q.remember("a", "t1", true)
	q.remember("b", "t2", true)
	q.remember("c", "t3", true)
	q.forget("b", true)
	_, dup := q.seen("b", true)
	require.False(t, dup)
	for _, id := range []string{"a", "c"} {
		_, dup := q.seen(id, true)
		require.True(t, dup, id)
	}
	q.forget("a", false)
	_, dup = q.seen("a", true)
	require.True(t, dup, "forget under older rules does nothing")
	q.forget("unknown", true)
	require.Len(t, q.InputIDs, 2)
}

// A refused signal input is counted and kept as the last rejection; a
// refusal without a type of its own is INVALID_INPUT.
func TestRefusedSignalInputsAreCountedWithTheLastOne(t *testing.T) {
	var q queueRecord
	n, last := q.rejections()
	require.Equal(t, 0, n)
	require.Nil(t, last)

	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	g := rejectionOf(&contract.Error{Type: contract.ErrGuardrail, Message: "no"}, "no", at)
	require.Same(t, g, q.refused(g))
	plain := rejectionOf(errors.New("boom"), "boom", at)
	require.Equal(t, contract.ErrInvalidInput, plain.Type)
	require.Equal(t, contract.FormatTime(at), plain.At)
	q.refused(plain)
	n, last = q.rejections()
	require.Equal(t, 2, n)
	require.Same(t, plain, last)
}
