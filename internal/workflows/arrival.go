package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/converter"
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
		NonRetryableErrorTypes: []string{contract.ErrInvalidInput, guard.ErrGuardrail, "FILE_NOT_FOUND", "FILE_CHANGED"},
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
	// runs (inputids.go).
	pending map[string]*pendingInput
	// contextGuards: some guardrail reads `context`, so every input is
	// checked by activity.
	contextGuards bool
	// updates counts the send and ask handlers running: the validators
	// bound it (updateRoom).
	updates int
}

// updateRoom refuses a send or an ask while MaxUpdatesInFlight of them run
// (waiting for an arrival check, a state read back or an answer): each
// holds one of Temporal's ten in-flight update slots, and decide,
// raise-budget and cancel-turn must always find one. A validator's
// refusal is not recorded, so this needs no rules version.
func (t *task) updateRoom() error {
	if t.arrivals.updates >= MaxUpdatesInFlight {
		return &contract.Error{Type: ErrQueueBusy, Message: fmt.Sprintf(
			"%d sends and asks are already in flight on this task, the most it runs at once so that decide and raise-budget always find one of Temporal's ten update slots; retry in a second or two, or send the input as the input signal, which takes no slot", t.arrivals.updates)}
	}
	return nil
}

// needsArrivalActivity says whether in must go through CheckInput.
func (t *task) needsArrivalActivity(in contract.TaskIO) bool {
	return in.HasFiles() || t.arrivals.contextGuards
}

// pureGuardrails runs the guardrails in workflow code, when they can.
func (t *task) pureGuardrails(in contract.TaskIO) error {
	if t.needsArrivalActivity(in) {
		return nil // CheckInput runs them
	}
	return guard.EvaluateGuardrails(guard.FromSpec(t.args.Agent.Guardrails), in.Message, guard.Context{})
}

// arrive checks an accepted input as far as it needs and queues it. It
// blocks while CheckInput runs; arrivals.checking counts inputs in that
// state, so the task neither closes nor continues as new without them.
func (t *task) arrive(ctx workflow.Context, m contract.Message) (contract.Message, error) {
	if t.needsArrivalActivity(m.TaskIO) {
		t.arrivals.checking++
		t.arrivals.inCheck = append(t.arrivals.inCheck, &m)
		defer func() { t.arrivals.checking--; t.leftArrival(&m) }()
		entries, err := t.spill(ctx)
		if err != nil {
			return m, err
		}
		t.arrivals.checks++
		agent, agentRef := t.agentForCall()
		in := activities.CheckInputInput{Transcript: t.durable.Transcript, Agent: agent, AgentRef: agentRef, Input: m.TaskIO, Entries: entries, End: t.durable.length(), TaskID: t.life.taskID,
			Retry: t.retry(fmt.Sprintf("check:%d", t.arrivals.checks))}
		var res activities.CheckInputResult
		o := t.waitingOptions(checkOptions, 0)
		o.Summary = "check input"
		actx := workflow.WithActivityOptions(ctx, o)
		done := t.waiting(in.Call)
		err = workflow.ExecuteActivity(actx, activities.CheckInputName, in).Get(ctx, &res)
		done()
		if err != nil {
			return m, unwrapActivityError(err)
		}
		res.Input.ReceivedAt, res.Input.CommittedAt = m.ReceivedAt, ""
		m.TaskIO = res.Input // received before any close: answered before the task ends
		if t.args.Mode == ModeSingle && t.durable.Turns > 0 {
			return m, &contract.Error{Type: contract.ErrTaskClosed, Message: "a single-mode task answers one turn, which started while this input was being checked; start a new task"}
		}
	}
	t.durable.Queue = append(t.durable.Queue, m)
	t.arrivals.queued++
	t.durable.LastActivity = contract.FormatTime(workflow.Now(ctx))
	t.life.idleExpired = false
	return m, nil
}

// leftArrival drops an input from those in their arrival check.
func (t *task) leftArrival(m *contract.Message) {
	for i, a := range t.arrivals.inCheck {
		if a == m {
			t.arrivals.inCheck = append(t.arrivals.inCheck[:i], t.arrivals.inCheck[i+1:]...)
			return
		}
	}
}

// received stamps an accepted input with the instant the runtime took
// delivery: the start time of the workflow task that delivers it.
func (t *task) received(ctx workflow.Context, in contract.TaskIO) contract.Message {
	now := workflow.Now(ctx)
	in.ReceivedAt = contract.FormatTime(now)
	in.CommittedAt = ""
	return contract.Message{Type: contract.TypeInput, TaskIO: in}
}

// accepting says whether the task takes another input, and why not.
func (t *task) accepting() error {
	switch {
	case t.life.state == StateCompleted || t.life.state == StateFailed || t.life.state == StateCanceled:
		return &contract.Error{Type: contract.ErrTaskClosed, Message: fmt.Sprintf("the task has %s and takes no more inputs; start a new task", t.life.state)}
	case t.durable.Closing || t.durable.Finished || t.life.state == StateShaping:
		return &contract.Error{Type: contract.ErrTaskClosed, Message: "the task is closing: inputs already received are being answered, new ones are refused; start a new task"}
	case t.args.Mode == ModeSingle && t.durable.Turns > 0:
		return &contract.Error{Type: contract.ErrTaskClosed, Message: "a single-mode task answers one turn and takes no further inputs; start a new task, or use mode \"conversation\""}
	}
	return nil
}

// decodeInput reads an input arriving by signal or update and takes its
// caller's ID off it.
func (t *task) decodeInput(raw converter.RawValue) (contract.TaskIO, string, error) {
	in, err := DecodeInput(raw)
	if err != nil {
		return in, "", err
	}
	return splitInputID(in, t.rules)
}

// checkInput is every acceptance rule on an input arriving by signal or
// update; it returns the input as it is queued.
func (t *task) checkInput(in contract.TaskIO) (contract.TaskIO, error) {
	if err := t.accepting(); err != nil {
		return contract.TaskIO{}, err
	}
	if err := t.queueRoom(in); err != nil {
		return contract.TaskIO{}, err
	}
	in, err := checkInputUnder(t.agent, in, t.rules)
	if err != nil {
		return in, err
	}
	return in, t.pureGuardrails(in)
}

// normalize is the input as queued (sizes set) without checking it again:
// the update's validator did, under the rules of its time.
func (t *task) normalize(in contract.TaskIO) contract.TaskIO {
	if out, err := checkInputUnder(t.agent, in, t.rules); err == nil {
		return out
	}
	return in
}

// checkInputUnder is contract.CheckInput under the rules of a run: the part
// bounds (parts per message, sizeBytes) are rules.boundedParts, and signals
// and start inputs are checked again on replay.
func checkInputUnder(a *contract.Agent, in contract.TaskIO, rules rules) (contract.TaskIO, error) {
	if !rules.boundedParts {
		return contract.CheckInputBefore(a, in)
	}
	return contract.CheckInput(a, in)
}
