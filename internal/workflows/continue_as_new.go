package workflows

import (
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
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

// start makes the channel the main loop asks the signal reader to drain
// through.
func (c *continuing) start(ctx workflow.Context) { c.drainReq = workflow.NewBufferedChannel(ctx, 1) }

// drainRequests is where the main loop asks for a drain.
func (c *continuing) drainRequests() workflow.ReceiveChannel { return c.drainReq }

// drainedNow: the signal reader drained the channels.
func (c *continuing) drainedNow() { c.drained = true }

// shouldContinueAsNew is checked between turns only.
func (t *task) shouldContinueAsNew(ctx workflow.Context) bool {
	if t.turn.busy() || t.arrivals.busy() {
		return false
	}
	info := workflow.GetInfo(ctx)
	due := info.GetContinueAsNewSuggested() ||
		(t.args.ContinueAsNewEvents > 0 && historyLength(ctx) >= t.args.ContinueAsNewEvents)
	if !due {
		return false
	}
	return !t.durable.tooLargeToCarry(t.rules.carryByRef)
}

// dueBeforeTurn: continue-as-new is due while inputs wait for a turn
// (rules.continueWhenDue). A conversation fed an input during every turn
// never has an empty queue, so waiting for one would let the run grow to
// Temporal's limits: the queue is carried instead. A turn already begun
// (paused for approvals, or answering a continued conversation's last
// inputs) and a closing task go on first.
func (t *task) dueBeforeTurn(ctx workflow.Context) bool {
	if !t.rules.continueWhenDue || t.durable.queued() == 0 || t.durable.pausedTurn() != nil ||
		t.turn.owed() || t.durable.closing() || t.durable.finished() {
		return false
	}
	t.continuing.noteSuggestion(ctx)
	return t.shouldContinueAsNew(ctx)
}

// noteSuggestion keeps the history length at which the server first
// suggested continuing: the hard bound is twice it.
func (c *continuing) noteSuggestion(ctx workflow.Context) {
	if c.dueAt == 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
		c.dueAt = max(1, historyLength(ctx))
	}
}

// mustContinue: the run is past the hard bound, twice the point at which
// continuing became due (the configured continueAsNewEvents, else where
// the server suggested it), or near the server's limit on updates. It then
// no longer yields to waiting asks: they are answered ANSWER_PENDING.
func (c *continuing) mustContinue(ctx workflow.Context, configured int) bool {
	c.noteSuggestion(ctx)
	n := historyLength(ctx)
	if configured > 0 && n >= 2*configured {
		return true
	}
	if c.dueAt > 0 && n >= 2*c.dueAt {
		return true
	}
	for _, r := range workflow.GetInfo(ctx).GetContinueAsNewSuggestedReasons() {
		if r == workflow.ContinueAsNewSuggestedReasonTooManyUpdates {
			return true // the server refuses updates at its limit, close after the suggestion
		}
	}
	return false
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
			if !t.continuing.drained || t.arrivals.busy() {
				return false
			}
			// An ask waits for a turn only the main loop runs, and a close
			// ends the task anyway: go back to the loop for them.
			return workflow.AllHandlersFinished(ctx) || (t.rules.continueYieldsToAsks && (t.asks.pending() || t.durable.closing()))
		}); err != nil {
			return nil // canceled: run() reports it
		}
		if t.asks.pending() && t.durable.pausedTurn() != nil && t.rules.pauseDespiteAsks {
			// The turn waits for people, possibly for days: the run goes on
			// as new, and the asks, which cannot cross runs, are told so.
			t.asks.failAll(allAsks, contract.ErrAnswerPending, "the task continued as new while the turn answering this input waited for a person's approval; the input is received and will be answered in a later turn: read the answer with the messages query")
			continue
		}
		if t.asks.pending() && !t.durable.closing() && t.rules.continueWhenDue && t.continuing.mustContinue(ctx, t.args.ContinueAsNewEvents) {
			// Asks keep arriving faster than turns end: the run is past its
			// hard bound and goes on as new, the asks' inputs carried.
			t.asks.failAll(allAsks, contract.ErrAnswerPending, "the task continued as new (its history reached twice the continue-as-new threshold with inputs still arriving) before a turn answered this input; the input is received and will be answered in the next run: read the answer with the messages query")
			continue
		}
		if t.durable.tooLargeToCarry(t.rules.carryByRef) || t.durable.closing() || t.asks.pending() {
			return nil
		}
		next, err := t.continueByReference(ctx, nextArgs(t.args, t.durable, t.rules))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if next != nil {
			t.logger.Info("continuing as new", "messages", t.durable.length(), "queued", t.durable.queued(), "by_reference", next.CarryRef != nil)
			return workflow.NewContinueAsNewError(ctx, contract.WorkflowType, *next)
		}
		// Stored by reference: drain again, and continue if nothing changed.
	}
}

// nextArgs is the next run's start argument: this one's (args), with the
// state (c).
func nextArgs(args StartArgs, c *Carry, r rules) StartArgs {
	c.trimForCarry()
	next := args
	next.Input = nil
	next.Collected = nil // carried in the state
	if r.continueNotCarried {
		next.Continue = nil // the state holds the carried conversation
	}
	next.Variables = map[string]json.RawMessage{}
	//workflowcheck:ignore a copy
	for n, v := range args.Variables {
		next.Variables[n] = v
	}
	for _, s := range args.Secrets {
		next.Variables[s] = json.RawMessage(`"[secret]"`) // a secret's value is never written again
	}
	next.Carry = c
	return next
}

// historyLength is the run's event count; the SDK's test environment does
// not count events, so unit tests replace it.
var historyLength = func(ctx workflow.Context) int { return workflow.GetInfo(ctx).GetCurrentHistoryLength() }

// storedAs is the reference of state already stored for continue-as-new
// when it holds exactly data; nil when it does not.
func (c *continuing) storedAs(data []byte) *activities.StashRef {
	if c.stored != nil && string(data) == c.storedJSON {
		return c.stored
	}
	return nil
}

// nextStore counts one more store and names it for run.
func (c *continuing) nextStore(run int) string {
	c.stores++
	return fmt.Sprintf("carry-%d.%d", run, c.stores)
}

// store records what was stored under ref.
func (c *continuing) store(ref activities.StashRef, data []byte) {
	c.stored, c.storedJSON = &ref, string(data)
}
