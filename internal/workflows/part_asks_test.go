package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// An ask is answered by the turn that commits its input: answer settles
// the asks whose ordinal is among the inputs committed, with the output
// and the turn, and leaves the later ones waiting.
func TestAnAskIsAnsweredByTheTurnThatCommitsItsInput(t *testing.T) {
	var k asks
	require.False(t, k.pending())
	first, second, third := k.wait(1), k.wait(2), k.wait(4)
	require.True(t, k.pending())

	out := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("done")}}
	k.answer(2, out, contract.TurnInfo{Turn: 1, Inputs: 2})
	require.True(t, first.done)
	require.True(t, second.done)
	require.Equal(t, out, second.out)
	require.Equal(t, 1, second.turn.Turn)
	require.NoError(t, second.err)
	require.False(t, third.done, "its input is not committed yet")
	require.True(t, k.pending())

	later := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("later")}}
	k.answer(4, later, contract.TurnInfo{Turn: 2, Inputs: 2})
	require.True(t, third.done)
	require.Equal(t, later, third.out)
	require.Equal(t, 2, third.turn.Turn)
	require.Equal(t, out, first.out, "an answered ask keeps its own answer")
	require.False(t, k.pending())
}

// failAll ends the asks whose inputs were committed with an error of the
// type given; allAsks ends every waiting ask, committed or not. An ask
// already answered keeps its answer.
func TestAsksFailWithFailAll(t *testing.T) {
	var k asks
	one, two, three := k.wait(1), k.wait(2), k.wait(3)
	k.answer(1, contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("a")}}, contract.TurnInfo{Turn: 1})

	k.failAll(2, contract.ErrTurnCanceled, "turn %d canceled", 2)
	require.NoError(t, one.err, "answered before: not failed")
	require.True(t, two.done)
	require.Equal(t, contract.ErrTurnCanceled, contract.TypeOf(two.err))
	require.Equal(t, "turn 2 canceled", contract.MessageOf(two.err))
	require.False(t, three.done)

	four := k.wait(4)
	k.failAll(allAsks, contract.ErrAnswerPending, "continued as new")
	for _, w := range []*askWait{three, four} {
		require.True(t, w.done)
		require.Equal(t, contract.ErrAnswerPending, contract.TypeOf(w.err))
	}
	require.Equal(t, contract.ErrTurnCanceled, contract.TypeOf(two.err), "a settled ask is not settled again")
	require.False(t, k.pending())

	k.failAll(allAsks, contract.ErrAnswerPending, "nothing waits")
	require.False(t, k.pending())
}

// A failAll for committed inputs none of the waiting asks is among ends
// none of them.
func TestFailAllLeavesAsksWhoseInputsAreNotCommitted(t *testing.T) {
	var k asks
	w := k.wait(3)
	k.failAll(0, contract.ErrTurnCanceled, "canceled")
	k.failAll(2, contract.ErrTurnCanceled, "canceled")
	require.False(t, w.done)
	require.NoError(t, w.err)
	require.True(t, k.pending())
}

// At MaxWaitingAsks handlers running the next ask is refused ASKS_FULL;
// one ending makes room.
func TestAnAskIsRefusedPastTheWaitingAsksRoom(t *testing.T) {
	var k asks
	var ends []func()
	for i := 0; i < contract.MaxWaitingAsks; i++ {
		require.NoError(t, k.room())
		ends = append(ends, k.started())
	}
	err := k.room()
	require.Equal(t, contract.ErrAsksFull, contract.TypeOf(err))
	require.Contains(t, err.Error(), "asks already wait")
	ends[len(ends)-1]()
	require.NoError(t, k.room())
}
