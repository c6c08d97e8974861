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
// blocks while CheckInput runs; t.arrivals.checking counts inputs in that state, so
// the task neither closes nor continues as new without them.
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
