package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/guard"
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

// task is one run of an agent task.
type task struct {
	reader TranscriptReader
	logger log.Logger

	args  StartArgs
	agent *contract.Agent
	idle  time.Duration
	s     *Carry
	state State
	err   *ErrorInfo
	ended string

	turnRunning bool
	cancelTurn  workflow.CancelFunc
	idleExpired bool

	// drainReq asks receiveSignals to drain the signal channels; drained
	// says it has.
	drainReq workflow.Channel
	drained  bool

	// contextGuards: some guardrail reads `context` (checked by activity).
	contextGuards bool
	// arriving counts inputs taken in but still being checked; inArrival
	// holds them (received_at set), which `messages` lists after the queue.
	arriving  int
	inArrival []*contract.Message
	// startInput waits for its arrival check in run().
	startInput *contract.Message
	// largeStart names the start argument's collected values kept whole by
	// reference in run(), before the first turn (rules.collectedRefs).
	largeStart []string
	// taskID is the workflow ID: the task's file space and log field (the
	// transcript may be an earlier task's, when this one continues it).
	taskID string
	// unanswered: the conversation this task continues ends with inputs
	// no output answered; the first turn answers them.
	unanswered bool

	// rules are the behaviours this run's rules version turns on (versions.go).
	rules rules
	// calls are the activity calls running now (by their retry name);
	// retries the last report of each that waits out an outage, newest last.
	calls   map[string]bool
	retries []retryState
	checks  int // arrival checks started in this run: names them
	// pending holds inputs whose ID is recorded while their arrival check runs.
	pending map[string]*pendingInput
	// carrying is the conversation this task continues, whose files are
	// copied into its own space before anything else (first run only).
	carrying *ContinueFrom
	// worker is the worker's configuration, once DescribeWorker ran in this run.
	worker *activities.WorkerDescription
	// queued and committed count the inputs this run queued and committed
	// (in that order); asks wait for the turn that commits theirs (ask.go).
	queued, committed int
	asks              []*askWait

	// agentStateSet is the AgentState search attribute's value ("" when the
	// start did not set it: never upserted); rootCtx is the run's context.
	agentStateSet string
	rootCtx       workflow.Context

	// loading names the state a previous run stored by reference: this run
	// reads it back first (largestate.go). Updates accepted meanwhile are
	// checked by their handler once it is read (afterRestore).
	loading *activities.StashRef
	// asking counts ask handlers running (their input being queued, or
	// waiting for the answer): the validator bounds it (MaxWaitingAsks).
	asking int
	// stashed is this run's state stored for continue-as-new, and the JSON
	// it holds; stashes counts the stores (names them).
	stashed     *activities.StashRef
	stashedData string
	stashes     int
}

// setup validates the start argument (or restores the previous run's state)
// and registers the message handlers. A refusal fails the task in its first
// workflow task, before any model call.
func (t *task) setup(ctx workflow.Context, raw converter.RawValue) error {
	t.rules = rulesFor(rulesVersion(ctx))
	t.calls, t.pending = map[string]bool{}, map[string]*pendingInput{}
	info := workflow.GetInfo(ctx)
	t.rootCtx, t.agentStateSet = ctx, knownAgentState(ctx)
	if ref := carryRefOf(raw); ref != nil && t.rules.carryByRef {
		if info.ContinuedExecutionRunID == "" {
			return appError(contract.Invalid("carryRef is written by the runtime when a task continues as new; leave it out"))
		}
		// The state is read back by run() before anything else.
		t.loading, t.taskID = ref, info.WorkflowExecution.ID
		t.state = StateWorking
		t.drainReq = workflow.NewBufferedChannel(ctx, 1)
		t.logger = log.With(workflow.GetLogger(ctx), "task_id", info.WorkflowExecution.ID)
		return t.registerHandlers(ctx)
	}
	args, agent, err := decodeStart(raw, t.rules)
	if err == nil && t.rules.ownActivityQueue && args.Carry == nil {
		err = checkTaskQueue(args.Agent, info.TaskQueueName)
	}
	if err != nil {
		return appError(err)
	}
	t.adopt(args, agent)
	now := workflow.Now(ctx)
	t.taskID = info.WorkflowExecution.ID
	if args.Stream {
		if err := CheckStreamID(t.taskID); err != nil {
			return appError(err)
		}
	}
	if args.Carry != nil {
		if info.ContinuedExecutionRunID == "" {
			return appError(contract.Invalid("carry is written by the runtime when a task continues as new; leave it out"))
		}
		t.resume(args.Carry)
	} else {
		t.s = newCarry(now)
		if t.rules.secretPrints {
			t.s.SecretPrints = printsOf(*args)
		}
		t.s.Transcript = activities.TranscriptKey{TaskID: info.WorkflowExecution.ID, FirstRunID: info.FirstRunID}
		if c := args.Continue; c != nil {
			t.continueFrom(*c, info.WorkflowExecution.ID, info.FirstRunID)
		}
		t.startHistory(ctx)
		t.queued = len(t.s.Queue)
		if args.Input != nil {
			in, id, _ := splitInputID(*args.Input, t.rules) // checked by decodeStart
			m := t.received(ctx, in)
			t.remember(id, m.ReceivedAt)
			t.startInput = &m
		}
		names := make([]string, 0, len(args.Collected))
		for n := range args.Collected {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			t.save(n, args.Collected[n]) // recalled as already collected (bounded, secrets masked)
			v := args.Collected[n]
			fromEarlier := args.Continue != nil && args.Continue.CollectedRefs[n].Stash != ""
			if t.rules.collectedRefs && (fromEarlier || (len(v) > maxSavedBytes && len(v) <= activities.MaxSavedValueBytes)) {
				t.largeStart = append(t.largeStart, n) // kept whole by reference before the first turn
			}
		}
	}
	t.ready(ctx)
	t.drainReq = workflow.NewBufferedChannel(ctx, 1)
	return t.registerHandlers(ctx)
}

// adopt takes a checked start argument as this run's.
func (t *task) adopt(args *StartArgs, agent *contract.Agent) {
	t.args, t.agent = *args, agent
	t.idle = DefaultIdleTimeout
	if args.IdleTimeout != "" {
		t.idle, _ = time.ParseDuration(args.IdleTimeout) // checked by DecodeStart
	}
}

// resume continues from the state the previous run carried.
func (t *task) resume(c *Carry) {
	t.s = c
	t.s.Run++
	t.queued = len(t.s.Queue)
}

// ready completes the run's setup once its state is known.
func (t *task) ready(ctx workflow.Context) {
	t.args.Carry = nil
	t.contextGuards = guard.AnyReadsContext(t.args.Agent.Guardrails)
	t.state = StateWaiting
	t.logger = log.With(workflow.GetLogger(ctx), "task_id", workflow.GetInfo(ctx).WorkflowExecution.ID, "run", t.s.Run)
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
	if t.carrying != nil {
		if err := t.carryFiles(ctx); err != nil {
			return t.fail(ctx, err)
		}
	}
	if t.args.Output != nil && t.s.OutputModel == "" {
		if err := t.startOutput(ctx); err != nil {
			return t.fail(ctx, err)
		}
	}
	if t.startInput != nil {
		// The start input is part of the start argument: a refusal fails the task.
		if _, err := t.arrive(ctx, *t.startInput); err != nil {
			return t.fail(ctx, err)
		}
	}
	t.showDetails(ctx)
	for {
		err := workflow.Await(ctx, func() bool {
			if t.arriving > 0 && len(t.s.Queue) == 0 {
				return false // an input is being checked: answer it before closing or continuing
			}
			return len(t.s.Queue) > 0 || t.unanswered || t.s.Paused != nil || t.s.Closing || t.s.Finished || t.idleExpired || t.shouldContinueAsNew(ctx)
		})
		if err != nil {
			return t.canceled(ctx)
		}
		switch {
		case len(t.s.Queue) > 0 || t.unanswered || t.s.Paused != nil:
			t.unanswered = false
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
			if t.s.Finished && len(t.s.Queue) == 0 && t.arriving == 0 {
				return t.complete(ctx, EndedByFinish) // inputs received before finish are answered first
			}
		case t.s.Closing:
			return t.complete(ctx, EndedByClose)
		case t.s.Finished:
			return t.complete(ctx, EndedByFinish) // the input still being checked at finish was refused
		case t.idleExpired:
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
	case t.state == StateCompleted || t.state == StateFailed || t.state == StateCanceled:
		return &contract.Error{Type: contract.ErrTaskClosed, Message: fmt.Sprintf("the task has %s and takes no more inputs; start a new task", t.state)}
	case t.s.Closing || t.s.Finished || t.state == StateShaping:
		return &contract.Error{Type: contract.ErrTaskClosed, Message: "the task is closing: inputs already received are being answered, new ones are refused; start a new task"}
	case t.args.Mode == ModeSingle && t.s.Turns > 0:
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
		State: StateCompleted, Turns: t.s.Turns, Usage: t.s.Usage,
		LastOutput: t.s.lastOutput(), EndedBy: endedBy, Messages: t.s.length(),
	}
	if t.args.Output != nil {
		// A task that asked for a result never completes without one.
		obj, records, err := t.shape(ctx)
		if err != nil {
			return t.fail(ctx, err)
		}
		res.Result, res.Records, res.Usage = obj, records, t.s.Usage
	}
	t.state, t.ended = StateCompleted, endedBy
	t.endApprovals(ctx)
	t.showDetails(ctx)
	t.logger.Info("task completed", "ended_by", endedBy, "turns", t.s.Turns)
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
	t.state, t.err = StateFailed, info
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
	t.state = StateCanceled
	t.endApprovals(ctx)
	t.failAsks(false, contract.ErrTaskClosed, "the task was canceled before answering this input")
	t.logger.Info("task canceled")
	return nil, temporal.NewCanceledError()
}

// shouldContinueAsNew is checked between turns only.
func (t *task) shouldContinueAsNew(ctx workflow.Context) bool {
	if t.turnRunning || t.arriving > 0 {
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

// tooLargeToCarry: without rules.carryByRef, a run whose state did not fit
// the continue-as-new argument postponed continuing.
func (t *task) tooLargeToCarry() bool {
	return !t.rules.carryByRef && t.carrySize() > maxCarryBytes
}

func (t *task) carrySize() int {
	c := *t.s
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
		t.drained = false
		t.drainReq.SendAsync(nil)
		if err := workflow.Await(ctx, func() bool {
			if !t.drained || t.arriving > 0 {
				return false
			}
			// An ask waits for a turn only the main loop runs, and a close
			// ends the task anyway: go back to the loop for them.
			return workflow.AllHandlersFinished(ctx) || (t.rules.continueYieldsToAsks && (len(t.asks) > 0 || t.s.Closing))
		}); err != nil {
			return nil // canceled: run() reports it
		}
		if len(t.asks) > 0 && t.s.Paused != nil && t.rules.pauseDespiteAsks {
			// The turn waits for people, possibly for days: the run goes on
			// as new, and the asks, which cannot cross runs, are told so.
			t.failAsks(false, ErrAnswerPending, "the task continued as new while the turn answering this input waited for a person's approval; the input is received and will be answered in a later turn: read the answer with the messages query")
			continue
		}
		if t.tooLargeToCarry() || t.s.Closing || len(t.asks) > 0 {
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
			t.logger.Info("continuing as new", "messages", t.s.length(), "queued", len(t.s.Queue), "by_reference", next.CarryRef != nil)
			return workflow.NewContinueAsNewError(ctx, WorkflowType, *next)
		}
		// Stored by reference: drain again, and continue if nothing changed.
	}
}

// nextArgs is the next run's start argument: this one's, with the state.
func (t *task) nextArgs() StartArgs {
	t.s.trimForCarry()
	next := t.args
	next.Input = nil
	next.Collected = nil // carried in the state
	if t.rules.continueNotCarried {
		next.Continue = nil // the state holds the carried conversation
	}
	next.Variables = map[string]json.RawMessage{}
	for n, v := range t.args.Variables {
		next.Variables[n] = v
	}
	for _, s := range t.args.Secrets {
		next.Variables[s] = json.RawMessage(`"[secret]"`) // a secret's value is never written again
	}
	next.Carry = t.s
	return next
}

// watchIdle ends a conversation nobody has used for the idle timeout. One
// timer covers a whole idle period: it is not restarted per input (that
// would add two events to every turn); when it fires early it is re-armed
// for the rest of the period.
func (t *task) watchIdle(ctx workflow.Context) {
	for {
		last, _ := contract.ParseTime(t.s.LastActivity)
		wait := last.Add(t.idle).Sub(workflow.Now(ctx))
		if wait <= 0 {
			if !t.turnRunning && len(t.s.Queue) == 0 && t.arriving == 0 {
				t.idleExpired = true
				// An input accepted in this same workflow task revives the
				// task (arrive() clears the flag): watch again.
				if err := workflow.Await(ctx, func() bool { return !t.idleExpired }); err != nil {
					return
				}
				continue
			}
			if t.rules.idleWaitsForWork {
				// Busy past the deadline: no timer until the work ends; the
				// turn's end starts the next idle period (LastActivity).
				if err := workflow.Await(ctx, func() bool { return !t.turnRunning && len(t.s.Queue) == 0 && t.arriving == 0 }); err != nil {
					return
				}
				continue
			}
			wait = t.idle
		}
		if err := workflow.NewTimer(ctx, wait).Get(ctx, nil); err != nil {
			return
		}
	}
}

// historyLength is the run's event count; the SDK's test environment does
// not count events, so unit tests replace it.
var historyLength = func(ctx workflow.Context) int { return workflow.GetInfo(ctx).GetCurrentHistoryLength() }

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
