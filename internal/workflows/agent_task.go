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
	"github.com/agenttask/agenttask/internal/activities"
)

// Workflows carries what the workflow's read-only side needs from the worker:
// the transcript, where `messages` finds entries of earlier runs. It is never
// used to make a decision, so replay does not depend on it.
type Workflows struct {
	Transcript TranscriptReader
	// DataConverter is the worker's (the codec's when payloads are
	// encrypted): the run reads the AgentRules memo with it
	// (newer_rules.go). Nil is the SDK's default.
	DataConverter converter.DataConverter
}

// AgentTask runs one agent task. Its argument is StartArgs as JSON, taken raw
// so that a malformed argument fails the task with INVALID_INPUT instead of
// failing workflow tasks forever.
func (w *Workflows) AgentTask(ctx workflow.Context, raw converter.RawValue) (*contract.Result, error) {
	t := &task{reader: w.Transcript, dc: w.DataConverter}
	if err := t.setup(ctx, raw); err != nil {
		return nil, err
	}
	return t.run(ctx)
}

// task is one run of an agent task: a few parts, each owned by the file
// that names it.
type task struct {
	reader TranscriptReader        // the read side: entries earlier runs left in the transcript (messages.go)
	dc     converter.DataConverter // the worker's, for the rules memo (newer_rules.go); nil: the default
	logger log.Logger              // with the task ID and the run
	rules  rules                   // what this run's rules version turns on (versions.go)

	args  StartArgs       // this run's start argument, checked (its carry taken into durable)
	agent *contract.Agent // args.Agent, checked

	durable    *Carry         // everything the next run is handed (state.go)
	life       lifecycle      // the task's identity, state and idle clock (below)
	opening    opening        // what run() does before the first turn (setup.go)
	turn       turnState      // the turn running now (turn.go)
	arrivals   arrivals       // inputs being taken in (arrival.go)
	asks       asks           // asks waiting for their answers (ask.go)
	outages    outages        // calls waiting out an outage (outages.go)
	continuing continuing     // handing the state to the next run (continue_as_new.go)
	mcp        mcpState       // the MCP tools this run listed (mcp.go)
	budget     budgetWait     // the call waiting for a budget raise (budget.go)
	shared     sharedContexts // the turn contexts this run's model calls named (turn_context.go)
	tree       treeState      // the running sub-tasks of an agent tree (tree.go)
}

// run is the conversation: wait for inputs, commit them all at the next
// model call, answer, repeat; end on close, after a single answer, or when
// idle.
func (t *task) run(ctx workflow.Context) (*contract.Result, error) {
	if t.opening.restoring() {
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
	t.watchTree(ctx) // tree.go
	if err := t.open(ctx); err != nil {
		return t.fail(ctx, err)
	}
	t.showDetails(ctx)
	for {
		if err := workflow.Await(ctx, func() bool { return t.hasWork(ctx) }); err != nil {
			return t.canceled(ctx)
		}
		if t.dueBeforeTurn(ctx) {
			// Due with inputs waiting: continue first, the queue carried
			// (continue_as_new.go); back here when an ask must be answered.
			if err := t.continueAsNew(ctx); err != nil {
				return t.fail(ctx, err)
			}
		}
		switch {
		case t.durable.queued() > 0 || t.turn.owed() || t.durable.pausedTurn() != nil:
			if ended, res, err := t.takeTurn(ctx); ended {
				return res, err
			}
		case t.durable.closing():
			return t.complete(ctx, contract.EndedByClose)
		case t.durable.finished():
			return t.complete(ctx, contract.EndedByFinish) // the input still being checked at finish was refused
		case t.life.idleExpired():
			return t.complete(ctx, contract.EndedByIdle)
		default:
			if err := t.continueAsNew(ctx); err != nil {
				return t.fail(ctx, err) // continued, or failed: the state could not be stored
			}
			// Signals drained at the last moment made the state too large
			// to carry: answer them first.
		}
	}
}

// hasWork is what the main loop waits for: inputs or a paused turn to
// answer, an end, or the time to continue as new.
func (t *task) hasWork(ctx workflow.Context) bool {
	if t.arrivals.busy() && t.durable.queued() == 0 {
		return false // an input is being checked: answer it before closing or continuing
	}
	return t.durable.queued() > 0 || t.turn.owed() || t.durable.pausedTurn() != nil || t.durable.closing() || t.durable.finished() || t.life.idleExpired() || t.shouldContinueAsNew(ctx)
}

// takeTurn runs a turn and says whether the task ended with it (and how).
func (t *task) takeTurn(ctx workflow.Context) (bool, *contract.Result, error) {
	t.turn.taken()
	if err := t.runTurn(ctx); errors.Is(err, errPaused) {
		// The turn waits for approvals and the run is due to continue as
		// new: it does, carrying the turn (or, when it cannot now, the loop
		// resumes the turn).
		if err := t.continueAsNew(ctx); err != nil {
			res, err := t.fail(ctx, err)
			return true, res, err
		}
		return false, nil, nil
	} else if err != nil {
		res, err := t.fail(ctx, err)
		return true, res, err
	}
	if ctx.Err() != nil {
		res, err := t.canceled(ctx)
		return true, res, err
	}
	// A single-mode task ends after its one turn, answered or canceled.
	if t.args.Mode == contract.ModeSingle {
		res, err := t.complete(ctx, contract.EndedBySingle)
		return true, res, err
	}
	if t.durable.finished() && t.durable.queued() == 0 && !t.arrivals.busy() {
		res, err := t.complete(ctx, contract.EndedByFinish) // inputs received before finish are answered first
		return true, res, err
	}
	return false, nil, nil
}

// complete ends the task successfully once every handler has finished.
func (t *task) complete(ctx workflow.Context, endedBy string) (*contract.Result, error) {
	t.asks.failAll(allAsks, contract.ErrTaskClosed, "the task ended (%s) before answering this input", endedBy)
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	res := &contract.Result{
		State: contract.StateCompleted, Turns: t.durable.turns(), Usage: t.durable.used(),
		LastOutput: t.durable.lastOutput(), EndedBy: endedBy, Messages: t.durable.length(),
	}
	if t.args.Output != nil {
		// A task that asked for a result never completes without one.
		obj, records, err := t.shape(ctx)
		if err != nil {
			return t.fail(ctx, err)
		}
		res.Result, res.Records, res.Usage = obj, records, t.durable.used()
	}
	res.Budget = t.durable.budgetStatus(t.budget)
	t.seal(ctx)
	t.life.completed(endedBy)
	endApprovals(ctx, t.life.id())
	t.showDetails(ctx)
	t.logger.Info("task completed", "ended_by", endedBy, "turns", t.durable.turns())
	return res, nil
}

// fail ends the task with a typed, non-retryable error; err from
// continueAsNew may be the continue-as-new itself, which ends the run.
func (t *task) fail(ctx workflow.Context, err error) (*contract.Result, error) {
	if workflow.IsContinueAsNewError(err) {
		return nil, err
	}
	if ctx.Err() != nil {
		return t.canceled(ctx)
	}
	info := &contract.ErrorInfo{Type: contract.ErrModel, Message: err.Error()}
	var se *contract.Error
	var ae *temporal.ApplicationError
	switch {
	case errors.As(err, &se):
		info.Type, info.Message = se.Type, se.Message
	case errors.As(err, &ae) && ae.Type() != "":
		info.Type, info.Message = ae.Type(), ae.Message()
	}
	t.life.failed(info)
	t.seal(ctx)
	endApprovals(ctx, t.life.id())
	t.asks.failAll(allAsks, info.Type, "the task failed before answering this input: %s", info.Message)
	t.showDetails(ctx)
	t.logger.Error("task failed", "type", info.Type, "error", info.Message)
	if ae != nil && ae.NonRetryable() && ae.HasDetails() {
		return nil, ae // keeps its details (OUTPUT_UNFIT: the records and the violations)
	}
	if d := budgetDetails(t.durable, &t.args, t.budget); d != nil {
		return nil, temporal.NewNonRetryableApplicationError(info.Message, info.Type, nil, *d) // a parent counts what it used
	}
	return nil, temporal.NewNonRetryableApplicationError(info.Message, info.Type, nil)
}

func (t *task) canceled(ctx workflow.Context) (*contract.Result, error) {
	t.seal(ctx)
	t.life.enter(contract.StateCanceled)
	endApprovals(ctx, t.life.id())
	t.asks.failAll(allAsks, contract.ErrTaskClosed, "the task was canceled before answering this input")
	t.logger.Info("task canceled")
	return nil, temporal.NewCanceledError()
}

func appError(err error) error {
	var se *contract.Error
	if errors.As(err, &se) {
		return temporal.NewNonRetryableApplicationError(se.Message, se.Type, nil)
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrInvalidInput, nil)
}

// seal writes what the transcript still lacks when the task ends (the last
// output's stamp, inputs a canceled turn committed), so the transcript
// holds the whole committed conversation whatever later removes the
// execution, with or without the retention sweep (rules.sealAtEnd). A
// storage outage is waited out for a while; past it the task ends anyway,
// the sweep's seal still to come.
func (t *task) seal(ctx workflow.Context) {
	if !t.rules.sealAtEnd || t.durable == nil || t.opening.restoring() || t.durable.length() == t.durable.base() {
		return
	}
	if ctx.Err() != nil {
		ctx, _ = workflow.NewDisconnectedContext(ctx) // a canceled task still seals
	}
	entries, err := spill(ctx, t.durable, t.rules.namedTimers)
	if err == nil && (len(entries.Write) > 0 || len(entries.Stamps) > 0) {
		o := writeOptions
		o.ScheduleToCloseTimeout = sealWait
		o.Summary = fmt.Sprintf("seal the transcript: %d entries", len(entries.Write)+len(entries.Stamps))
		in := activities.WriteEntriesInput{Transcript: t.durable.transcriptKey(), Entries: entries}
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), activities.WriteEntriesName, in).Get(ctx, nil)
	}
	if err != nil {
		t.logger.Warn("the transcript was not sealed at the end: the retention sweep seals it", "error", err)
		return
	}
	t.durable.allDurable()
}

// sealWait bounds the seal's wait for storage at the end of a task.
const sealWait = 10 * time.Minute
