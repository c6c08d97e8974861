package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
)

// Workflows carries what the workflow's read-only side needs from the worker:
// the transcript, where `messages` finds entries of earlier runs. It is never
// used to make a decision, so replay does not depend on it.
type Workflows struct {
	Transcript TranscriptReader
}

// AgentTask runs one agent task. Its argument is StartArgs as JSON, taken raw
// so that a malformed argument fails the task with INVALID_INPUT instead of
// failing workflow tasks forever.
func (w *Workflows) AgentTask(ctx workflow.Context, raw converter.RawValue) (*Result, error) {
	t := &task{reader: w.Transcript}
	if err := t.setup(ctx, raw); err != nil {
		return nil, err
	}
	return t.run(ctx)
}

// task is one run of an agent task: a few parts, each owned by the file
// that names it.
type task struct {
	reader TranscriptReader // the read side: entries earlier runs left in the transcript (messages.go)
	logger log.Logger       // with the task ID and the run
	rules  rules            // what this run's rules version turns on (versions.go)

	args  StartArgs       // this run's start argument, checked (its carry taken into durable)
	agent *contract.Agent // args.Agent, checked

	durable    *Carry     // everything the next run is handed (state.go)
	life       lifecycle  // the task's identity, state and idle clock (below)
	opening    opening    // what run() does before the first turn (setup.go)
	turn       turnState  // the turn running now (turn.go)
	arrivals   arrivals   // inputs being taken in (arrival.go)
	asks       asks       // asks waiting for their answers (ask.go)
	outages    outages    // calls waiting out an outage (outages.go)
	continuing continuing // handing the state to the next run (continue_as_new.go)
}

// lifecycle is where the task is in its life: what status shows and what
// ends it.
type lifecycle struct {
	// taskID is the workflow ID: the task's file space and log field (the
	// transcript may be an earlier task's, when this one continues it).
	taskID  string
	state   State
	err     *ErrorInfo // why the task failed
	endedBy string     // how it completed
	// idle is the idle timeout; idleExpired says it passed with nothing to do.
	idle        time.Duration
	idleExpired bool
	// agentState is the AgentState search attribute's value ("" when the
	// start did not set it: never upserted); root is the run's context,
	// which upserts it (operator.go).
	agentState string
	root       workflow.Context
}

// run is the conversation: wait for inputs, commit them all at the next
// model call, answer, repeat; end on close, after a single answer, or when
// idle.
func (t *task) run(ctx workflow.Context) (*Result, error) {
	if t.restoring() {
		if err := t.restoreStashed(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, temporal.NewCanceledError()
			}
			t.logger.Error("the stored state cannot be read back", "error", err)
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrInternal, nil)
		}
	}
	workflow.Go(ctx, t.receiveSignals)
	workflow.Go(ctx, t.watchIdle)
	if err := t.checkMounts(ctx); err != nil {
		return t.fail(ctx, err)
	}
	if err := t.stashAgent(ctx); err != nil {
		return t.fail(ctx, err)
	}
	t.keepStartValues(ctx)
	if t.opening.carrying != nil {
		if err := t.carryFiles(ctx); err != nil {
			return t.fail(ctx, err)
		}
	}
	if t.args.Output != nil && t.durable.OutputModel == "" {
		if err := t.startOutput(ctx); err != nil {
			return t.fail(ctx, err)
		}
	}
	if t.opening.input != nil {
		// The start input is part of the start argument: a refusal fails the task.
		if _, err := t.arrive(ctx, *t.opening.input); err != nil {
			return t.fail(ctx, err)
		}
	}
	t.showDetails(ctx)
	for {
		err := workflow.Await(ctx, func() bool {
			if t.arrivals.checking > 0 && len(t.durable.Queue) == 0 {
				return false // an input is being checked: answer it before closing or continuing
			}
			return len(t.durable.Queue) > 0 || t.turn.unanswered || t.durable.Paused != nil || t.durable.Closing || t.durable.Finished || t.life.idleExpired || t.shouldContinueAsNew(ctx)
		})
		if err != nil {
			return t.canceled(ctx)
		}
		switch {
		case len(t.durable.Queue) > 0 || t.turn.unanswered || t.durable.Paused != nil:
			t.turn.unanswered = false
			if err := t.runTurn(ctx); errors.Is(err, errPaused) {
				// The turn waits for approvals and the run is due to
				// continue as new: it does, carrying the turn (or, when it
				// cannot now, the loop resumes the turn).
				if err := t.continueAsNew(ctx); err != nil {
					if workflow.IsContinueAsNewError(err) {
						return nil, err
					}
					return t.fail(ctx, err)
				}
				continue
			} else if err != nil {
				return t.fail(ctx, err)
			}
			if ctx.Err() != nil {
				return t.canceled(ctx)
			}
			// A single-mode task ends after its one turn, answered or canceled.
			if t.args.Mode == ModeSingle {
				return t.complete(ctx, EndedBySingle)
			}
			if t.durable.Finished && len(t.durable.Queue) == 0 && t.arrivals.checking == 0 {
				return t.complete(ctx, EndedByFinish) // inputs received before finish are answered first
			}
		case t.durable.Closing:
			return t.complete(ctx, EndedByClose)
		case t.durable.Finished:
			return t.complete(ctx, EndedByFinish) // the input still being checked at finish was refused
		case t.life.idleExpired:
			return t.complete(ctx, EndedByIdle)
		default:
			if err := t.continueAsNew(ctx); err != nil {
				if workflow.IsContinueAsNewError(err) {
					return nil, err
				}
				return t.fail(ctx, err) // the state could not be stored
			}
			// Signals drained at the last moment made the state too large
			// to carry: answer them first.
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

// complete ends the task successfully once every handler has finished.
func (t *task) complete(ctx workflow.Context, endedBy string) (*Result, error) {
	t.failAsks(false, contract.ErrTaskClosed, "the task ended (%s) before answering this input", endedBy)
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	res := &Result{
		State: StateCompleted, Turns: t.durable.Turns, Usage: t.durable.Usage,
		LastOutput: t.durable.lastOutput(), EndedBy: endedBy, Messages: t.durable.length(),
	}
	if t.args.Output != nil {
		// A task that asked for a result never completes without one.
		obj, records, err := t.shape(ctx)
		if err != nil {
			return t.fail(ctx, err)
		}
		res.Result, res.Records, res.Usage = obj, records, t.durable.Usage
	}
	t.life.state, t.life.endedBy = StateCompleted, endedBy
	t.endApprovals(ctx)
	t.showDetails(ctx)
	t.logger.Info("task completed", "ended_by", endedBy, "turns", t.durable.Turns)
	return res, nil
}

// fail ends the task with a typed, non-retryable error.
func (t *task) fail(ctx workflow.Context, err error) (*Result, error) {
	if ctx.Err() != nil {
		return t.canceled(ctx)
	}
	info := &ErrorInfo{Type: contract.ErrModel, Message: err.Error()}
	var se *contract.Error
	var ae *temporal.ApplicationError
	switch {
	case errors.As(err, &se):
		info.Type, info.Message = se.Type, se.Message
	case errors.As(err, &ae) && ae.Type() != "":
		info.Type, info.Message = ae.Type(), ae.Message()
	}
	t.life.state, t.life.err = StateFailed, info
	t.endApprovals(ctx)
	t.failAsks(false, info.Type, "the task failed before answering this input: %s", info.Message)
	t.showDetails(ctx)
	t.logger.Error("task failed", "type", info.Type, "error", info.Message)
	if ae != nil && ae.NonRetryable() && ae.HasDetails() {
		return nil, ae // keeps its details (OUTPUT_UNFIT: the records and the violations)
	}
	return nil, temporal.NewNonRetryableApplicationError(info.Message, info.Type, nil)
}

func (t *task) canceled(ctx workflow.Context) (*Result, error) {
	t.life.state = StateCanceled
	t.endApprovals(ctx)
	t.failAsks(false, contract.ErrTaskClosed, "the task was canceled before answering this input")
	t.logger.Info("task canceled")
	return nil, temporal.NewCanceledError()
}

// watchIdle ends a conversation nobody has used for the idle timeout. One
// timer covers a whole idle period: it is not restarted per input (that
// would add two events to every turn); when it fires early it is re-armed
// for the rest of the period.
func (t *task) watchIdle(ctx workflow.Context) {
	for {
		last, _ := contract.ParseTime(t.durable.LastActivity)
		wait := last.Add(t.life.idle).Sub(workflow.Now(ctx))
		if wait <= 0 {
			if !t.turn.running && len(t.durable.Queue) == 0 && t.arrivals.checking == 0 {
				t.life.idleExpired = true
				// An input accepted in this same workflow task revives the
				// task (arrive() clears the flag): watch again.
				if err := workflow.Await(ctx, func() bool { return !t.life.idleExpired }); err != nil {
					return
				}
				continue
			}
			if t.rules.idleWaitsForWork {
				// Busy past the deadline: no timer until the work ends; the
				// turn's end starts the next idle period (LastActivity).
				if err := workflow.Await(ctx, func() bool { return !t.turn.running && len(t.durable.Queue) == 0 && t.arrivals.checking == 0 }); err != nil {
					return
				}
				continue
			}
			wait = t.life.idle
		}
		if err := workflow.NewTimer(ctx, wait).Get(ctx, nil); err != nil {
			return
		}
	}
}

func appError(err error) error {
	var se *contract.Error
	if errors.As(err, &se) {
		return temporal.NewNonRetryableApplicationError(se.Message, se.Type, nil)
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrInvalidInput, nil)
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
