package workflows

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// arrivalInput is an input message of one text part, received at at.
func arrivalInput(text, at string) *contract.Message {
	return &contract.Message{Type: contract.TypeInput, TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(text)}, ReceivedAt: at}}
}

// A run's arrivals start from the queue it carried: the carried inputs
// count as queued by this run, so the next one queued is the one after
// them; checks are named from 1 in every run.
func TestArrivalsCountTheCarriedQueueAsQueuedByThisRun(t *testing.T) {
	var a arrivals
	a.start(3, nil)
	require.Equal(t, 3, a.lastQueued())
	require.Equal(t, 4, a.queuedOne())
	require.Equal(t, 5, a.queuedOne())
	require.Equal(t, 5, a.lastQueued())
	require.Equal(t, 1, a.nextCheck())
	require.Equal(t, 2, a.nextCheck())

	var fresh arrivals
	fresh.start(0, nil)
	require.Equal(t, 0, fresh.lastQueued())
	require.Equal(t, 1, fresh.queuedOne())
}

// An input in its arrival check keeps the task busy and is listed, in
// arrival order, until its check ends; ending one check takes that input
// out and leaves the others in their order.
func TestAnInputIsListedAndKeepsTheTaskBusyWhileItsCheckRuns(t *testing.T) {
	var a arrivals
	a.start(0, nil)
	require.False(t, a.busy())
	require.Empty(t, a.listed())

	one, two, three := arrivalInput("one", "t1"), arrivalInput("two", "t2"), arrivalInput("three", "t3")
	endOne := a.begin(one)
	endTwo := a.begin(two)
	endThree := a.begin(three)
	require.True(t, a.busy())
	require.Equal(t, []*contract.Message{one, two, three}, a.beingChecked())
	listed := a.listed()
	require.Len(t, listed, 3)
	require.Equal(t, "t2", listed[1].ReceivedAt)

	endTwo()
	require.Equal(t, []*contract.Message{one, three}, a.beingChecked(), "the middle one leaves, the others keep their order")
	require.True(t, a.busy())
	endOne()
	endThree()
	require.False(t, a.busy())
	require.Empty(t, a.beingChecked())
	require.Empty(t, a.listed())
}

// A signal's input whose check runs beside the signal reader keeps the
// task busy, though it is not listed, until its check ends.
func TestASignalsCheckBesideTheReaderKeepsTheTaskBusyUnlisted(t *testing.T) {
	var a arrivals
	a.start(0, nil)
	end := a.beginBeside()
	require.True(t, a.busy())
	require.Empty(t, a.beingChecked())
	end()
	require.False(t, a.busy())
}

// An input needs the CheckInput activity when it has file parts, or when
// some guardrail of the agent reads the conversation (context); guardrails
// that read only the input are run without it.
func TestAnInputNeedsTheArrivalActivityForFilesOrAGuardrailReadingContext(t *testing.T) {
	text := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("hi")}}
	file := "s3://bucket/report.pdf"
	withFile := contract.TaskIO{Message: []contract.ContentPart{{MimeType: "application/pdf", File: &file}}}

	var inputOnly arrivals
	inputOnly.start(0, []contract.Guardrail{{Name: "short", Expression: "size(i) < 5", Message: "too many parts"}})
	require.False(t, inputOnly.needsActivity(text))
	require.True(t, inputOnly.needsActivity(withFile))

	var readsContext arrivals
	readsContext.start(0, []contract.Guardrail{
		{Name: "short", Expression: "size(i) < 5", Message: "too many parts"},
		{Name: "first", Expression: "size(context.input) < 10", Message: "too long a conversation"},
	})
	require.True(t, readsContext.needsActivity(text), "a guardrail reads context: every input is checked by activity")
}

// While an input's ID is held its outcome is pending; release records the
// check's outcome for whoever waits on it and drops the hold, and releasing
// an ID never held changes nothing.
func TestReleasingAHeldInputIDRecordsItsOutcome(t *testing.T) {
	var a arrivals
	a.start(0, nil)
	a.hold("in-1")
	a.hold("in-2")
	one, two := a.pending["in-1"], a.pending["in-2"]
	require.NotNil(t, one)
	require.False(t, one.done)

	refusal := &contract.Error{Type: contract.ErrFileNotFound, Message: "no such file"}
	a.release("in-1", refusal)
	require.True(t, one.done)
	require.True(t, errors.Is(one.err, refusal))
	require.NotContains(t, a.pending, "in-1", "a later input with the ID is taken afresh")

	a.release("in-2", nil)
	require.True(t, two.done)
	require.NoError(t, two.err)

	a.release("never-held", refusal)
	require.Empty(t, a.pending)
}

// Sends and asks in flight are bounded: at MaxUpdatesInFlight the next is
// refused QUEUE_BUSY, and one ending makes room again.
func TestUpdatesInFlightAreRefusedPastTheirRoom(t *testing.T) {
	var a arrivals
	a.start(0, nil)
	var ends []func()
	for i := 0; i < contract.MaxUpdatesInFlight; i++ {
		require.NoError(t, a.updateRoom(), "update %d", i+1)
		ends = append(ends, a.updateStarted())
	}
	err := a.updateRoom()
	require.Equal(t, contract.ErrQueueBusy, contract.TypeOf(err))
	require.Contains(t, err.Error(), "already in flight")

	ends[0]()
	require.NoError(t, a.updateRoom())
	for _, end := range ends[1:] {
		end()
	}
	require.NoError(t, a.updateRoom())
}
