package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// enter moves the task to a state and says which it left; only completed,
// failed and canceled are ends.
func TestTheLifecycleEntersAStateAndSaysWhichItLeft(t *testing.T) {
	var l lifecycle
	require.Equal(t, contract.State(""), l.enter(contract.StateWaiting))
	require.Equal(t, contract.StateWaiting, l.enter(contract.StateWorking))
	require.Equal(t, contract.StateWorking, l.current())
	for _, s := range []contract.State{contract.StateWaiting, contract.StateWorking, contract.StateAwaitingApproval, contract.StateShaping} {
		l.enter(s)
		require.False(t, l.ended(), "%s is not an end", s)
	}
	for _, s := range []contract.State{contract.StateCompleted, contract.StateFailed, contract.StateCanceled} {
		l.enter(s)
		require.True(t, l.ended(), "%s is an end", s)
	}
}

// A completed task says how it ended and has no failure; a failed one
// keeps why.
func TestTheLifecycleEndsCompletedOrFailed(t *testing.T) {
	var done lifecycle
	done.enter(contract.StateWorking)
	require.Equal(t, "", done.endedHow())
	done.completed(contract.EndedByIdle)
	require.Equal(t, contract.StateCompleted, done.current())
	require.True(t, done.ended())
	require.Equal(t, contract.EndedByIdle, done.endedHow())
	require.Nil(t, done.failure())

	var failed lifecycle
	failed.enter(contract.StateWorking)
	info := &contract.ErrorInfo{Type: contract.ErrModel, Message: "the model failed"}
	failed.failed(info)
	require.Equal(t, contract.StateFailed, failed.current())
	require.True(t, failed.ended())
	require.Same(t, info, failed.failure())
	require.Equal(t, "", failed.endedHow())
}

// The idle timeout is the default unless the start argument gives one; an
// expired idle timeout is revived by an input.
func TestTheIdleTimeoutIsTheDefaultOrTheStartArguments(t *testing.T) {
	var l lifecycle
	l.setIdle("")
	require.Equal(t, contract.DefaultIdleTimeout, l.idleTimeout())
	l.setIdle("90m")
	require.Equal(t, 90*time.Minute, l.idleTimeout())

	require.False(t, l.idleExpired())
	l.expire()
	require.True(t, l.idleExpired())
	l.revive()
	require.False(t, l.idleExpired())
}

// The AgentState last upserted is tracked; "" until one is.
func TestTheLifecycleTracksTheAgentStateUpserted(t *testing.T) {
	var l lifecycle
	require.Equal(t, "", l.trackedAgentState())
	l.agentStateUpserted(contract.AgentStateRetrying)
	require.Equal(t, contract.AgentStateRetrying, l.trackedAgentState())
}

// A task takes inputs while it waits or works; an ended task, a closing or
// finished one, one shaping its output, and a single-mode task that began
// its turn refuse them TASK_CLOSED, each saying why.
func TestTheLifecycleRefusesInputsOnceTheTaskEndsOrCloses(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	open := newCarry(now)
	var l lifecycle
	l.enter(contract.StateWaiting)
	require.NoError(t, l.accepting(open, contract.ModeConversation))
	require.NoError(t, l.accepting(open, contract.ModeSingle), "no turn yet")
	l.enter(contract.StateWorking)
	require.NoError(t, l.accepting(open, contract.ModeConversation))

	refused := func(l lifecycle, c *Carry, mode contract.Mode, says string) {
		t.Helper()
		err := l.accepting(c, mode)
		require.Equal(t, contract.ErrTaskClosed, contract.TypeOf(err))
		require.Contains(t, err.Error(), says)
	}
	for _, s := range []contract.State{contract.StateCompleted, contract.StateFailed, contract.StateCanceled} {
		var ended lifecycle
		ended.enter(s)
		refused(ended, open, contract.ModeConversation, "has "+string(s))
	}

	closing := newCarry(now)
	require.True(t, closing.close())
	refused(l, closing, contract.ModeConversation, "is closing")
	finished := newCarry(now)
	finished.finish()
	refused(l, finished, contract.ModeConversation, "is closing")
	var shaping lifecycle
	shaping.enter(contract.StateShaping)
	refused(shaping, open, contract.ModeConversation, "is closing")

	single := newCarry(now)
	single.beginTurn(now)
	refused(l, single, contract.ModeSingle, "single-mode")
	require.NoError(t, l.accepting(single, contract.ModeConversation), "a conversation takes inputs after its turns")
}
