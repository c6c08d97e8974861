package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// turnLog is a logger that keeps the messages it was given.
type turnLog struct{ infos []string }

func (l *turnLog) Debug(msg string, keyvals ...any) {}
func (l *turnLog) Info(msg string, keyvals ...any)  { l.infos = append(l.infos, msg) }
func (l *turnLog) Warn(msg string, keyvals ...any)  {}
func (l *turnLog) Error(msg string, keyvals ...any) {}

// queuedCarry is a fresh state with the inputs texts queued.
func queuedCarry(now time.Time, texts ...string) *Carry {
	c := newCarry(now)
	for _, s := range texts {
		c.enqueue(*arrivalInput(s, contract.FormatTime(now)))
	}
	return c
}

// The continued conversation's unanswered inputs are owed to the first
// turn until it takes them.
func TestATurnOwesTheContinuedConversationsInputsUntilItTakesThem(t *testing.T) {
	var ts turnState
	require.False(t, ts.owed())
	ts.owe()
	require.True(t, ts.owed())
	ts.taken()
	require.False(t, ts.owed())
}

// cancelFor cancels the running turn when the signal names it or names no
// turn; a signal for another turn, or with no turn running, does nothing.
func TestCancelForStopsOnlyTheTurnItNames(t *testing.T) {
	canceled := 0
	cancel := func() { canceled++ }
	log := &turnLog{}

	idle := turnState{cancel: cancel}
	idle.cancelFor(0, 3, log)
	require.Equal(t, 0, canceled, "no turn runs")
	noCancel := turnState{running: true}
	noCancel.cancelFor(0, 3, log) // no cancel func yet: nothing to call
	require.True(t, noCancel.busy())
	require.Empty(t, log.infos)

	ts := turnState{running: true, cancel: cancel}
	require.True(t, ts.busy())
	ts.cancelFor(2, 3, log)
	require.Equal(t, 0, canceled, "a late signal for turn 2")
	require.Equal(t, []string{"cancel-turn for another turn: ignored"}, log.infos)

	ts.cancelFor(3, 3, log)
	require.Equal(t, 1, canceled)
	ts.cancelFor(0, 3, log)
	require.Equal(t, 2, canceled, "0 names whichever turn runs")
	require.Equal(t, "cancel-turn requested", log.infos[len(log.infos)-1])
}

// commitQueue commits every queued input at one instant, in order, and
// counts them as committed and not yet shown.
func TestCommitQueueCommitsEveryQueuedInputAtOneInstant(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := queuedCarry(now, "a", "b", "c")
	var ts turnState
	at := c.nextInstant(now)
	require.Equal(t, 3, ts.commitQueue(c, at))
	require.Equal(t, 0, c.queued())
	require.Equal(t, 3, c.length())
	for p, want := range []string{"a", "b", "c"} {
		m := c.at(p).Msg
		require.Equal(t, at, m.CommittedAt)
		require.Equal(t, want, *m.Message[0].Text)
	}
	require.Equal(t, 3, ts.committed)
	require.Equal(t, 3, ts.unshown)
	require.Equal(t, 0, ts.commitQueue(c, c.nextInstant(now)), "nothing queued")
	require.Equal(t, 3, ts.committed)
}

// A call the budget refused hands its unshown inputs back to the head of
// the queue without committed_at; recommit commits them again at the
// instants they had, and, with all, what arrived meanwhile at a fresh one.
func TestUncommittedInputsCommitAgainAtTheirInstants(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := queuedCarry(now, "a", "b")
	var ts turnState
	info, _ := c.beginTurn(now)
	ts.committedNow(info.Inputs)
	first := c.at(0).Msg.CommittedAt
	require.Equal(t, 2, info.Inputs)

	ts.uncommit(c, &info)
	require.Equal(t, 0, info.Inputs)
	require.Equal(t, 0, ts.committed)
	require.Equal(t, 0, c.length())
	require.Equal(t, 2, c.queued())
	for i, m := range c.queuedInputs() {
		require.Empty(t, m.CommittedAt, "input %d waits uncommitted", i)
	}
	last, _ := c.recentTurns()
	require.Equal(t, 0, last.Inputs, "the turn's record follows")

	c.enqueue(*arrivalInput("c", contract.FormatTime(now)))
	ts.recommit(c, now, &info, false)
	require.Equal(t, 2, info.Inputs)
	require.Equal(t, 2, ts.committed)
	require.Equal(t, 2, c.length())
	require.Equal(t, first, c.at(0).Msg.CommittedAt)
	require.Equal(t, first, c.at(1).Msg.CommittedAt)
	require.Equal(t, 1, c.queued(), "without all, the input that arrived meanwhile waits")
	require.Equal(t, "c", *c.queuedInputs()[0].Message[0].Text)

	ts.uncommit(c, &info)
	ts.recommit(c, now.Add(time.Second), &info, true)
	require.Equal(t, 3, info.Inputs)
	require.Equal(t, 3, ts.committed)
	require.Equal(t, 0, c.queued())
	require.Equal(t, first, c.at(1).Msg.CommittedAt)
	require.NotEqual(t, first, c.at(2).Msg.CommittedAt, "what arrived meanwhile commits at a fresh instant")
	last, _ = c.recentTurns()
	require.Equal(t, 3, last.Inputs)
}

// With every committed input shown to the model, uncommit hands nothing
// back.
func TestUncommitHandsNothingBackOnceTheModelSawTheInputs(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := queuedCarry(now, "a")
	ts := turnState{}
	info, _ := c.beginTurn(now)
	ts.committedNow(info.Inputs)
	ts.unshown = 0 // the model call showed them
	ts.uncommit(c, &info)
	require.Equal(t, 1, info.Inputs)
	require.Equal(t, 1, ts.committed)
	require.Equal(t, 1, c.length())
	require.Equal(t, 0, c.queued())
	require.Equal(t, 1, c.turns())
}
