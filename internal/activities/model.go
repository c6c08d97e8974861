package activities

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/a2a"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/mcp"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/transcript"
)

// Activities holds what the activities depend on.
type Activities struct {
	Models     llm.Client
	Transcript Transcript
	Files      *mount.Store // the agents' mounts; nil: agents cannot use files
	// Mounts is the storage agents may name (AGENT_MOUNTS); nothing else is opened.
	Mounts mount.Mounts
	// OutputModel is the worker's default model of the shaping pass ("" none).
	OutputModel string
	// Signals tells a task that one of its calls is waiting out an outage
	// (the worker's Temporal client); nil: no reports.
	Signals Signaler
	// Queries reads a task's turn context when a call names it by digest
	// and this worker has not seen it (the worker's Temporal client;
	// turn_context.go); nil: such a call fails.
	Queries Querier
	// Broker carries streamed turns' text to the Tasks API (stream.go);
	// nil: turns are not streamed.
	Broker *broker.Broker
	// Metrics records model calls and shaping attempts (metrics.go); nil:
	// nothing is recorded.
	Metrics Metrics
	// SlideWindow shows the model the window as it was before cache-stable
	// requests (the longest suffix that fits, moving one entry a turn):
	// only the bench sets it, to report both (window_block.go).
	SlideWindow bool
	// Prices prices the calls of tasks with a budget (budget.go); nil: no
	// model has a price, so only token budgets can be kept.
	Prices Prices
	// MCP reaches the MCP servers the operator lists (AGENT_MCP_SERVERS;
	// mcp.go); nil: none, and an mcp capability is refused at start.
	MCP *mcp.Pool
	// A2A reaches the remote agents the operator lists (AGENT_A2A_AGENTS;
	// a2a.go); nil: none, and a call of an a2a capability is refused.
	A2A *a2a.Client

	once     sync.Once
	windows  *windowCache  // per-task tails of the model's window
	prefixes prefixes      // per-task parts of the last request (prefix.go)
	starts   startMemory   // per-task window starts, for calls that bring none (window_block.go)
	context  contextMemory // what providers' contexts took and refused (contextmemory.go)
	contexts turnContexts  // the runs' turn contexts this worker has seen (turn_context.go)
}

// Transcript is the part of the transcript store the activities use.
type Transcript interface {
	WriteAt(ctx context.Context, k TranscriptKey, pos int, m contract.Message) error
	// PutPending stores an output once and returns the stored one.
	PutPending(ctx context.Context, k TranscriptKey, pos, turn int, m contract.Message) (contract.Message, error)
	GetPending(ctx context.Context, k TranscriptKey, pos, turn int) (contract.Message, error)
	Window(ctx context.Context, k TranscriptKey, end, budgetBytes int) (int, []contract.Message, error)
	Read(ctx context.Context, k TranscriptKey, from, to int) ([]contract.Message, error)
	// WriteLink records k.Parent for tasks that continue k's task.
	WriteLink(ctx context.Context, k TranscriptKey) error
	// PutOnce stores v under name unless stored already (then decoded into
	// stored, true); GetOnce reads it.
	PutOnce(ctx context.Context, k TranscriptKey, name string, v, stored any) (bool, error)
	GetOnce(ctx context.Context, k TranscriptKey, name string, v any) error
	// PutLatest stores v under name, replacing what was there; GetLatest
	// reads it (an error wrapping transcript.ErrNotFound when none is).
	PutLatest(ctx context.Context, k TranscriptKey, name string, v any) error
	GetLatest(ctx context.Context, k TranscriptKey, name string, v any) error
}

const (
	heartbeatEvery = 500 * time.Millisecond
	// structuredAttempts bounds the model calls a turn makes to get an output
	// that carries every exposes key and fits the schema.
	structuredAttempts = 3
)

// ModelTurn answers one turn of a task's conversation, in these steps:
//
//   - begin: the run's turn context, when the call names it by its digest;
//     the agent, when its large spec travels by reference; the task's
//     budget; the stream of a streamed turn; and the heartbeat, so
//     cancel-turn stops the attempt promptly and a dead worker is noticed;
//   - check the agent;
//   - then either the answer an earlier attempt of a streamed turn stored,
//   - or: persist the new entries (they land while the next steps run),
//     read the window, build the request, ask the model until its answer
//     fits (each call fitted to the model's context), and store the answer
//     once the entries have landed;
//   - end, however the steps did: settle the budget, decide the retry,
//     tell the stream.
//
// The steps are in model_steps.go.
func (a *Activities) ModelTurn(ctx context.Context, in ModelTurnInput) (*ModelTurnResult, error) {
	ctx, t, err := a.beginTurn(ctx, in)
	if err != nil {
		return nil, a.waitOut(ctx, in.Retry, err) // nothing begun, nothing to end
	}
	if err := t.checkAgent(); err != nil {
		return t.end(nil, err)
	}
	if earlier, err := t.storedAnswer(ctx); earlier != nil || err != nil {
		return t.end(earlier, err)
	}
	fresh, err := t.persist(ctx)
	if err != nil {
		return t.end(nil, err)
	}
	w, err := t.window(ctx, fresh)
	if err != nil {
		return t.end(nil, t.landed(ctx, err))
	}
	req, err := t.request(ctx, w)
	if err != nil {
		return t.end(nil, t.landed(ctx, err))
	}
	res, err := t.ask(ctx, req)
	if err := t.landed(ctx, err); err != nil {
		return t.end(nil, err)
	}
	if len(res.ToolCalls) > 0 {
		return t.end(res, nil) // the workflow runs them, then calls the model again
	}
	if err := t.store(ctx, res, w.from); err != nil {
		return t.end(nil, err)
	}
	return t.end(res, nil)
}

// turnCall is one ModelTurn attempt: what its steps share.
type turnCall struct {
	a      *Activities
	in     ModelTurnInput  // its turn context and agent filled in (beginTurn)
	agent  *contract.Agent // checked (checkAgent); its instructions filled by request
	budget *budgetGuard    // nil without a budget (budget.go)
	prefix *prefixMeasure  // the shared prefix of the last request sent (prefix.go)
	stream *turnStream     // nil unless the turn streams its text (stream.go)
	logger log.Logger
	// durable waits for the entries persist started writing; nil before.
	durable func() error
	// endCtx is the attempt's context without the heartbeat: end's.
	endCtx        context.Context
	stopHeartbeat func()
}

// beginTurn begins an attempt: the run's turn context filled in when the
// call names it by digest (turn_context.go), the agent read when a large
// spec travels by reference (stash.go), the task's budget (budget.go), the
// measure of the requests' shared prefix (prefix.go), the turn's stream
// (stream.go), and the heartbeat, until end. It returns the context the
// steps run in. When it fails, nothing has begun: no end follows.
func (a *Activities) beginTurn(ctx context.Context, in ModelTurnInput) (context.Context, *turnCall, error) {
	in, err := a.resolveContext(ctx, in)
	if err != nil {
		return ctx, nil, err
	}
	if in.AgentRef != nil {
		spec, err := a.agentSpec(ctx, in.Agent, in.AgentRef)
		if err != nil {
			return ctx, nil, err
		}
		in.Agent = spec
	}
	ctx, budget, err := a.withBudget(ctx, in.Budget, &in.Transcript, in.Retry) // nil without a budget
	if err != nil {
		return ctx, nil, err
	}
	ctx, prefix := withPrefixMeasure(ctx, tailKey(ctx, in.Transcript))
	t := &turnCall{a: a, in: in, budget: budget, prefix: prefix, endCtx: ctx,
		stream: a.openStream(ctx, in), // nil unless the turn streams its text
		logger: log.With(activity.GetLogger(ctx), "task_id", in.Task(), "turn", in.Turn)}
	ctx, t.stopHeartbeat = heartbeating(ctx)
	return ctx, t, nil
}

// end ends an attempt, whichever step it stopped at, and returns what the
// activity returns: the heartbeat stops; a request the budget refused
// makes a result that says so, and an answer carries its units
// (budget.go); the result takes the last request's shared prefix
// (prefix.go), its large saved values go by reference (values.go), and it
// is never one Temporal refuses, retried without end (toolargs.go);
// waitOut decides whether Temporal tries again (retry.go), and a failure
// carries what it spent (budget.go); the stream says how the attempt
// ended (stream.go).
func (t *turnCall) end(res *ModelTurnResult, err error) (*ModelTurnResult, error) {
	t.stopHeartbeat()
	ctx := t.endCtx
	res, err = t.budget.settleTurn(res, err)
	if res != nil && t.prefix.total > 0 {
		res.PrefixBytes, res.RequestBytes = t.prefix.shared, t.prefix.total
	}
	if err == nil && t.in.LargeValues != nil {
		if err = t.a.storeLargeValues(ctx, t.in, res); err != nil {
			res = nil
		}
	}
	if err == nil {
		if err = checkResultSize(res); err != nil {
			res = nil
		}
	}
	err = t.budget.withSpent(t.a.waitOut(ctx, t.in.Retry, err))
	t.stream.end(ctx, t.in, res, err, t.logger)
	return res, err
}

// storageError is a transcript fault: retried, and reported as INTERNAL if
// it never recovers (it is not the model's fault). A position that holds
// another entry of this run (ErrConflict), or one of the run that replaced
// this one (ErrSuperseded: this attempt outlived its run, reset), stays so:
// that is final at once, never retried for the task's retry timeout.
func storageError(what string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, transcript.ErrConflict) || errors.Is(err, transcript.ErrSuperseded) {
		return temporal.NewNonRetryableApplicationError(what+": "+err.Error(), contract.ErrInternal, err)
	}
	return temporal.NewApplicationError(what+": "+err.Error(), contract.ErrInternal)
}

// heartbeating records a heartbeat at a steady pace until stopped.
func heartbeating(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return ctx, func() { close(done); cancel() }
}

// modelError maps a client error to a retryable or final activity error.
func modelError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ae *temporal.ApplicationError
	if isBudgetShort(err) || errors.As(err, &ae) { // the budget's, already decided (budget.go)
		return err
	}
	var le *llm.Error
	if errors.As(err, &le) && !le.Retryable {
		return temporal.NewNonRetryableApplicationError(le.Message, contract.ErrModel, nil)
	}
	opts := temporal.ApplicationErrorOptions{}
	msg := err.Error()
	if le != nil {
		msg = le.Message
		if le.RetryAfter > 0 {
			opts.NextRetryDelay = le.RetryAfter
		}
	}
	return temporal.NewApplicationErrorWithOptions(msg, contract.ErrModelUnavailable, opts)
}
