package workflows

import (
	"fmt"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
)

// The ask update is send plus the answer: it replies once the output of the
// turn that commits its input is committed. Inputs are committed in the
// order they were queued, so an input is known by its ordinal among the
// inputs queued in this run: the turn that brings the committed count to it
// answers it. An ask holds continue-as-new until answered, so ordinals
// never span runs; only a turn waiting for approvals, which may wait for
// days, continues as new regardless (rules.pauseDespiteAsks), ending its
// asks with ANSWER_PENDING first.

// asks are the ask handlers of this run.
type asks struct {
	waiting []*askWait // asks whose input is queued, waiting for their answer
	// handlers counts ask handlers running (their input being queued, or
	// waiting for the answer): the validator bounds it (MaxWaitingAsks).
	handlers int
}

// askWait is an ask waiting for its answer.
type askWait struct {
	ord  int
	done bool
	out  contract.TaskIO
	turn TurnInfo
	err  error
}

// askRoom refuses an ask while MaxWaitingAsks are running: each holds one
// of Temporal's ten in-flight update slots until its turn answers, and
// decide, send and the caller's other updates need the rest.
func (t *task) askRoom() error {
	if t.asks.handlers >= MaxWaitingAsks {
		return &contract.Error{Type: ErrAsksFull, Message: fmt.Sprintf(
			"%d asks already wait for their answers, the most a task holds (Temporal admits ten updates in flight); send the input with the send update and read the answer with the messages query, or ask again once an answer has come", t.asks.handlers)}
	}
	return nil
}

// ask queues the input as send does and waits for its answer.
func (t *task) ask(ctx workflow.Context, raw converter.RawValue) (AskResult, error) {
	t.asks.handlers++
	t.arrivals.updates++
	defer func() { t.asks.handlers--; t.arrivals.updates-- }()
	if err := t.afterRestore(ctx, raw); err != nil {
		return AskResult{}, err
	}
	_, id, err := t.decodeInput(raw)
	if err != nil {
		return AskResult{}, appError(err)
	}
	if _, dup := t.seen(sendInputID(ctx, id)); dup {
		return AskResult{}, appError(contract.Invalid("this input's ID was used before: ask answers each input once; read the answer with the messages query"))
	}
	receipt, err := t.send(ctx, raw)
	if err != nil {
		return AskResult{}, err
	}
	w := &askWait{ord: t.arrivals.queued} // send returned right after queueing it
	t.asks.waiting = append(t.asks.waiting, w)
	if err := workflow.Await(ctx, func() bool { return w.done }); err != nil {
		return AskResult{}, err
	}
	if w.err != nil {
		return AskResult{}, appError(w.err)
	}
	return AskResult{ReceivedAt: receipt.ReceivedAt, Output: w.out, Turn: w.turn}, nil
}

// answerAsks gives out, the output just committed, to every ask whose input
// is committed.
func (t *task) answerAsks(out contract.TaskIO, turn TurnInfo) {
	t.settleAsks(func(w *askWait) bool { return w.ord <= t.turn.committed }, func(w *askWait) { w.out, w.turn = out, turn })
}

// failAsks ends waiting asks (all, or those whose input is committed) with
// an error.
func (t *task) failAsks(committedOnly bool, typ, format string, args ...any) {
	err := &contract.Error{Type: typ, Message: fmt.Sprintf(format, args...)}
	t.settleAsks(func(w *askWait) bool { return !committedOnly || w.ord <= t.turn.committed }, func(w *askWait) { w.err = err })
}

func (t *task) settleAsks(match func(*askWait) bool, settle func(*askWait)) {
	kept := t.asks.waiting[:0]
	for _, w := range t.asks.waiting {
		if !w.done && match(w) {
			settle(w)
			w.done = true
			continue
		}
		kept = append(kept, w)
	}
	t.asks.waiting = kept
}

// ErrTurnCanceled fails an ask whose turn was canceled (cancel-turn).
const ErrTurnCanceled = "TURN_CANCELED"

// checkHistory checks StartArgs.history.
func checkHistory(h []HistoryMessage) error {
	if len(h) > MaxHistoryMessages {
		return contract.Invalid("history: %d messages, more than %d", len(h), MaxHistoryMessages)
	}
	total := 0
	for i, m := range h {
		if m.Role != "user" && m.Role != "assistant" {
			return contract.Invalid("history[%d].role: %q must be \"user\" or \"assistant\"", i, m.Role)
		}
		if m.Content == "" {
			return contract.Invalid("history[%d].content: required", i)
		}
		total += len(m.Content)
	}
	if total > MaxHistoryBytes {
		return contract.Invalid("history: %d bytes of content, more than %d", total, MaxHistoryBytes)
	}
	return nil
}

// startHistory commits the start argument's history as the first entries,
// at the task's start instant (a microsecond apart, in order): written
// whole by the first call.
func (t *task) startHistory(ctx workflow.Context) {
	if len(t.args.History) == 0 {
		return
	}
	for _, h := range t.args.History {
		at := t.durable.nextInstant(workflow.Now(ctx)) // a microsecond apart: each entry in its own commit
		io := contract.TaskIO{Message: contract.TextParts(h.Content), CommittedAt: at}
		m := contract.Message{Type: contract.TypeOutput, TaskIO: io}
		if h.Role == "user" {
			m.Type, m.ReceivedAt = contract.TypeInput, at
		} else {
			t.durable.LastOutputPos = t.durable.length()
		}
		t.durable.Held = append(t.durable.Held, heldEntry{Msg: m, Whole: true})
	}
	t.args.History = nil // in the state now: not carried twice
}
