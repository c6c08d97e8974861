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
	turn contract.TurnInfo
	err  error
}

// room refuses an ask while MaxWaitingAsks are running: each holds one
// of Temporal's ten in-flight update slots until its turn answers, and
// decide, send and the caller's other updates need the rest.
func (k *asks) room() error {
	if k.handlers >= contract.MaxWaitingAsks {
		return &contract.Error{Type: contract.ErrAsksFull, Message: fmt.Sprintf(
			"%d asks already wait for their answers, the most a task holds (Temporal admits ten updates in flight); send the input with the send update and read the answer with the messages query, or ask again once an answer has come", k.handlers)}
	}
	return nil
}

// started counts an ask handler running until the returned func.
func (k *asks) started() (end func()) {
	k.handlers++
	return func() { k.handlers-- }
}

// wait registers an ask waiting for the answer to the input this run
// queued as ordinal ord.
func (k *asks) wait(ord int) *askWait {
	w := &askWait{ord: ord}
	k.waiting = append(k.waiting, w)
	return w
}

// pending says some ask waits for its answer.
func (k *asks) pending() bool { return len(k.waiting) > 0 }

// answer gives out, the output just committed, to every ask whose input
// is among the first committed inputs of this run.
func (k *asks) answer(committed int, out contract.TaskIO, turn contract.TurnInfo) {
	k.settle(func(w *askWait) bool { return w.ord <= committed }, func(w *askWait) { w.out, w.turn = out, turn })
}

// allAsks makes failAll end every waiting ask.
const allAsks = -1

// failAll ends waiting asks with an error: all of them (allAsks), or
// those whose input is among the first committed inputs of this run.
func (k *asks) failAll(committed int, typ, format string, args ...any) {
	err := &contract.Error{Type: typ, Message: fmt.Sprintf(format, args...)}
	k.settle(func(w *askWait) bool { return committed < 0 || w.ord <= committed }, func(w *askWait) { w.err = err })
}

func (k *asks) settle(match func(*askWait) bool, settle func(*askWait)) {
	kept := k.waiting[:0]
	for _, w := range k.waiting {
		if !w.done && match(w) {
			settle(w)
			w.done = true
			continue
		}
		kept = append(kept, w)
	}
	k.waiting = kept
}

// ask queues the input as send does and waits for its answer.
func (t *task) ask(ctx workflow.Context, raw converter.RawValue) (contract.AskResult, error) {
	defer t.asks.started()()
	defer t.arrivals.updateStarted()()
	if err := t.afterRestore(ctx, raw); err != nil {
		return contract.AskResult{}, err
	}
	a, err := t.admit(ctx, raw, viaUpdate)
	if err != nil {
		return contract.AskResult{}, appError(err)
	}
	if a.repeat() {
		return contract.AskResult{}, appError(contract.Invalid("this input's ID was used before: ask answers each input once; read the answer with the messages query"))
	}
	receipt, err := t.send(ctx, raw)
	if err != nil {
		return contract.AskResult{}, err
	}
	w := t.asks.wait(t.arrivals.lastQueued()) // send returned right after queueing it
	if err := workflow.Await(ctx, func() bool { return w.done }); err != nil {
		return contract.AskResult{}, err
	}
	if w.err != nil {
		return contract.AskResult{}, appError(w.err)
	}
	return contract.AskResult{ReceivedAt: receipt.ReceivedAt, Output: w.out, Turn: w.turn}, nil
}

// checkHistory checks StartArgs.history.
func checkHistory(h []contract.HistoryMessage) error {
	if len(h) > contract.MaxHistoryMessages {
		return contract.Invalid("history: %d messages, more than %d", len(h), contract.MaxHistoryMessages)
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
	if total > contract.MaxHistoryBytes {
		return contract.Invalid("history: %d bytes of content, more than %d", total, contract.MaxHistoryBytes)
	}
	return nil
}
