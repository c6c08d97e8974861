package workflows

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/internal/activities"
)

// continuing is what this run needs to hand its state to the next.
type continuing struct {
	// drainReq asks receiveSignals to drain the signal channels; drained
	// says it has.
	drainReq workflow.Channel
	drained  bool
	// stored is this run's state stored for continue-as-new (largestate.go),
	// storedJSON the JSON it holds; stores counts the stores (names them).
	stored     *activities.StashRef
	storedJSON string
	stores     int
	// dueAt is the history length at which the server first suggested
	// continuing (rules.continueWhenDue): twice it forces the run on.
	dueAt int
}

// shouldContinueAsNew is checked between turns only.
func (t *task) shouldContinueAsNew(ctx workflow.Context) bool {
	if t.turn.running || t.arrivals.checking > 0 {
		return false
	}
	info := workflow.GetInfo(ctx)
	due := info.GetContinueAsNewSuggested() ||
		(t.args.ContinueAsNewEvents > 0 && historyLength(ctx) >= t.args.ContinueAsNewEvents)
	if !due {
		return false
	}
	return !t.tooLargeToCarry()
}

// dueBeforeTurn: continue-as-new is due while inputs wait for a turn
// (rules.continueWhenDue). A conversation fed an input during every turn
// never has an empty queue, so waiting for one would let the run grow to
// Temporal's limits: the queue is carried instead. A turn already begun
// (paused for approvals, or answering a continued conversation's last
// inputs) and a closing task go on first.
func (t *task) dueBeforeTurn(ctx workflow.Context) bool {
	if !t.rules.continueWhenDue || len(t.durable.Queue) == 0 || t.durable.Paused != nil ||
		t.turn.unanswered || t.durable.Closing || t.durable.Finished {
		return false
	}
	t.noteSuggestion(ctx)
	return t.shouldContinueAsNew(ctx)
}

// noteSuggestion keeps the history length at which the server first
// suggested continuing: the hard bound is twice it.
func (t *task) noteSuggestion(ctx workflow.Context) {
	if t.continuing.dueAt == 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
		t.continuing.dueAt = max(1, historyLength(ctx))
	}
}

// mustContinue: the run is past the hard bound, twice the point at which
// continuing became due (the configured continueAsNewEvents, else where
// the server suggested it), or near the server's limit on updates. It then
// no longer yields to waiting asks: they are answered ANSWER_PENDING.
func (t *task) mustContinue(ctx workflow.Context) bool {
	if !t.rules.continueWhenDue {
		return false
	}
	t.noteSuggestion(ctx)
	n := historyLength(ctx)
	if t.args.ContinueAsNewEvents > 0 && n >= 2*t.args.ContinueAsNewEvents {
		return true
	}
	if t.continuing.dueAt > 0 && n >= 2*t.continuing.dueAt {
		return true
	}
	for _, r := range workflow.GetInfo(ctx).GetContinueAsNewSuggestedReasons() {
		if r == workflow.ContinueAsNewSuggestedReasonTooManyUpdates {
			return true // the server refuses updates at its limit, close after the suggestion
		}
	}
	return false
}

// tooLargeToCarry: without rules.carryByRef, a run whose state did not fit
// the continue-as-new argument postponed continuing.
func (t *task) tooLargeToCarry() bool {
	return !t.rules.carryByRef && t.carrySize() > maxCarryBytes
}

func (t *task) carrySize() int {
	c := *t.durable
	c.Held = append([]heldEntry(nil), c.Held...)
	c.trimForCarry()
	b, _ := json.Marshal(c)
	return len(b)
}

// continueAsNew hands the whole state to a new run: signals still in the
// channels are received first, so nothing is lost. It returns nil without
// continuing when what was drained must be answered first (or, before
// without rules.carryByRef, no longer fits the carry).
func (t *task) continueAsNew(ctx workflow.Context) error {
	for {
		t.continuing.drained = false
		t.continuing.drainReq.SendAsync(nil)
		if err := workflow.Await(ctx, func() bool {
			if !t.continuing.drained || t.arrivals.checking > 0 {
				return false
			}
			// An ask waits for a turn only the main loop runs, and a close
			// ends the task anyway: go back to the loop for them.
			return workflow.AllHandlersFinished(ctx) || (t.rules.continueYieldsToAsks && (len(t.asks.waiting) > 0 || t.durable.Closing))
		}); err != nil {
			return nil // canceled: run() reports it
		}
		if len(t.asks.waiting) > 0 && t.durable.Paused != nil && t.rules.pauseDespiteAsks {
			// The turn waits for people, possibly for days: the run goes on
			// as new, and the asks, which cannot cross runs, are told so.
			t.failAsks(false, ErrAnswerPending, "the task continued as new while the turn answering this input waited for a person's approval; the input is received and will be answered in a later turn: read the answer with the messages query")
			continue
		}
		if len(t.asks.waiting) > 0 && !t.durable.Closing && t.mustContinue(ctx) {
			// Asks keep arriving faster than turns end: the run is past its
			// hard bound and goes on as new, the asks' inputs carried.
			t.failAsks(false, ErrAnswerPending, "the task continued as new (its history reached twice the continue-as-new threshold with inputs still arriving) before a turn answered this input; the input is received and will be answered in the next run: read the answer with the messages query")
			continue
		}
		if t.tooLargeToCarry() || t.durable.Closing || len(t.asks.waiting) > 0 {
			return nil
		}
		next, err := t.continueByReference(ctx, t.nextArgs())
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if next != nil {
			t.logger.Info("continuing as new", "messages", t.durable.length(), "queued", len(t.durable.Queue), "by_reference", next.CarryRef != nil)
			return workflow.NewContinueAsNewError(ctx, WorkflowType, *next)
		}
		// Stored by reference: drain again, and continue if nothing changed.
	}
}

// nextArgs is the next run's start argument: this one's, with the state.
func (t *task) nextArgs() StartArgs {
	t.durable.trimForCarry()
	next := t.args
	next.Input = nil
	next.Collected = nil // carried in the state
	if t.rules.continueNotCarried {
		next.Continue = nil // the state holds the carried conversation
	}
	next.Variables = map[string]json.RawMessage{}
	//workflowcheck:ignore a copy
	for n, v := range t.args.Variables {
		next.Variables[n] = v
	}
	for _, s := range t.args.Secrets {
		next.Variables[s] = json.RawMessage(`"[secret]"`) // a secret's value is never written again
	}
	next.Carry = t.durable
	return next
}

// historyLength is the run's event count; the SDK's test environment does
// not count events, so unit tests replace it.
var historyLength = func(ctx workflow.Context) int { return workflow.GetInfo(ctx).GetCurrentHistoryLength() }
