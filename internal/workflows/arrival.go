package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/guard"
)

// An input is checked when it arrives. Shape, limits, references and
// guardrails that read only `i` are pure and run here; an input with file
// parts, or an agent whose guardrails read `context`, needs the CheckInput
// activity first (the mount and the transcript are outside workflow code).
// Only then is the input queued: an update returns after the check, so a
// missing file is refused to its caller.

var checkOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Minute, // a 10 GB object is hashed on arrival
	HeartbeatTimeout:    10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 8,
		NonRetryableErrorTypes: []string{contract.ErrInvalidInput, contract.ErrGuardrail, contract.ErrFileNotFound, contract.ErrFileChanged},
	},
}

// arrivals are the inputs being taken in, and what this run queued.
type arrivals struct {
	// checking counts inputs taken in whose arrival check has not ended;
	// inCheck holds those in CheckInput (received_at set), which
	// `messages` lists after the queue.
	checking int
	inCheck  []*contract.Message
	checks   int // arrival checks started in this run: names them
	// queued counts the inputs this run queued; an ask knows its input by
	// it (ask.go).
	queued int
	// pending holds inputs whose ID is recorded while their arrival check
	// runs: a repeat of the ID waits for the outcome.
	pending map[string]*pendingInput
	// contextGuards: some guardrail reads `context`, so every input is
	// checked by activity.
	contextGuards bool
	// updates counts the send and ask handlers running: the validators
	// bound it (updateRoom).
	updates int
}

// pendingInput is an input whose ID is recorded while its arrival check
// runs.
type pendingInput struct {
	done bool
	err  error
}

// start sets the run's arrivals up: queued inputs carried from the
// previous run count as queued by this one, and the guardrails say whether
// every input needs the arrival activity.
func (a *arrivals) start(carriedQueue int, guardrails []contract.Guardrail) {
	a.pending = map[string]*pendingInput{}
	a.queued = carriedQueue
	a.contextGuards = guard.AnyReadsContext(guardrails)
}

// busy says an input's arrival check runs: the task neither closes nor
// continues as new, nor goes idle, before it ends.
func (a *arrivals) busy() bool { return a.checking > 0 }

// beingChecked are the inputs in CheckInput now, in arrival order.
func (a *arrivals) beingChecked() []*contract.Message { return a.inCheck }

// listed are the inputs in CheckInput, as `messages` lists them.
func (a *arrivals) listed() []contract.Message {
	out := make([]contract.Message, 0, len(a.inCheck))
	for _, m := range a.inCheck {
		out = append(out, *m)
	}
	return out
}

// begin counts an input entering its arrival check; the returned func
// ends it.
func (a *arrivals) begin(m *contract.Message) (end func()) {
	a.checking++
	a.inCheck = append(a.inCheck, m)
	return func() {
		a.checking--
		for i, c := range a.inCheck {
			if c == m {
				a.inCheck = append(a.inCheck[:i], a.inCheck[i+1:]...)
				return
			}
		}
	}
}

// beginBeside counts a signal's input whose check runs in a coroutine of
// its own, from before the coroutine starts.
func (a *arrivals) beginBeside() (end func()) {
	a.checking++
	return func() { a.checking-- }
}

// nextCheck names the next arrival check of this run.
func (a *arrivals) nextCheck() int {
	a.checks++
	return a.checks
}

// queuedOne counts an input this run queued and returns its ordinal.
func (a *arrivals) queuedOne() int {
	a.queued++
	return a.queued
}

// lastQueued is the ordinal of the input this run queued last.
func (a *arrivals) lastQueued() int { return a.queued }

// hold records that the input with this ID is in its arrival check.
func (a *arrivals) hold(id string) { a.pending[id] = &pendingInput{} }

// release ends a hold with the check's outcome.
func (a *arrivals) release(id string, err error) {
	if p := a.pending[id]; p != nil {
		p.done, p.err = true, err
		delete(a.pending, id)
	}
}

// outcome waits for the arrival check of the input held under id, when
// one runs, and returns its refusal as the update's error.
func (a *arrivals) outcome(ctx workflow.Context, id string) error {
	p := a.pending[id]
	if p == nil {
		return nil
	}
	if err := workflow.Await(ctx, func() bool { return p.done }); err != nil {
		return err
	}
	if p.err != nil {
		return appError(p.err)
	}
	return nil
}

// updateStarted counts a send or ask handler running until the returned
// func.
func (a *arrivals) updateStarted() (end func()) {
	a.updates++
	return func() { a.updates-- }
}

// updateRoom refuses a send or an ask while MaxUpdatesInFlight of them run
// (waiting for an arrival check, a state read back or an answer): each
// holds one of Temporal's ten in-flight update slots, and decide,
// raise-budget and cancel-turn must always find one. A validator's
// refusal is not recorded, so this needs no rules version.
func (a *arrivals) updateRoom() error {
	if a.updates >= contract.MaxUpdatesInFlight {
		return &contract.Error{Type: contract.ErrQueueBusy, Message: fmt.Sprintf(
			"%d sends and asks are already in flight on this task, the most it runs at once so that decide and raise-budget always find one of Temporal's ten update slots; retry in a second or two, or send the input as the input signal, which takes no slot", a.updates)}
	}
	return nil
}

// needsActivity says whether in must go through CheckInput: it has file
// parts, or some guardrail reads the conversation.
func (a *arrivals) needsActivity(in contract.TaskIO) bool {
	return in.HasFiles() || a.contextGuards
}

// arrive checks an accepted input as far as it needs and queues it. It
// blocks while CheckInput runs; arrivals count inputs in that state, so the
// task neither closes nor continues as new without them.
func (t *task) arrive(ctx workflow.Context, m contract.Message) (contract.Message, error) {
	if t.arrivals.needsActivity(m.TaskIO) {
		defer t.arrivals.begin(&m)()
		entries, err := spill(ctx, t.durable, t.rules.namedTimers)
		if err != nil {
			return m, err
		}
		check := t.arrivals.nextCheck()
		agent, agentRef := t.durable.agentForCall(t.args.Agent)
		in := activities.CheckInputInput{Transcript: t.durable.transcriptKey(), Agent: agent, AgentRef: agentRef, Input: m.TaskIO, Entries: entries, End: t.durable.length(), TaskID: t.life.id(),
			Retry: t.waitOut().retry(fmt.Sprintf("check:%d", check))}
		var res activities.CheckInputResult
		o := t.waitOut().options(checkOptions, 0)
		o.Summary = "check input"
		actx := workflow.WithActivityOptions(ctx, o)
		done := t.outages.waiting(in.Call)
		err = workflow.ExecuteActivity(actx, activities.CheckInputName, in).Get(ctx, &res)
		done()
		if err != nil {
			return m, unwrapActivityError(err)
		}
		res.Input.ReceivedAt, res.Input.CommittedAt = m.ReceivedAt, ""
		m.TaskIO = res.Input // received before any close: answered before the task ends
		if t.args.Mode == contract.ModeSingle && t.durable.turns() > 0 {
			return m, &contract.Error{Type: contract.ErrTaskClosed, Message: "a single-mode task answers one turn, which started while this input was being checked; start a new task"}
		}
	}
	t.durable.enqueue(m)
	t.arrivals.queuedOne()
	t.durable.touch(workflow.Now(ctx))
	t.life.revive()
	return m, nil
}
