package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/agenttask/agenttask/contract"
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
	// Error type of a transient model failure; retried by the activity's
	// retry policy, reported as MODEL_ERROR if it never recovers.
	errModelUnavailable = "MODEL_UNAVAILABLE"
)

// ModelTurn makes the new entries durable, reads the conversation window
// from the transcript, calls the model and returns its output. It heartbeats
// throughout, so cancel-turn stops it promptly and a dead worker is noticed.
func (a *Activities) ModelTurn(ctx context.Context, in ModelTurnInput) (*ModelTurnResult, error) {
	in, err := a.resolveContext(ctx, in) // a call that names its run's context by digest (turn_context.go)
	if err != nil {
		return nil, a.waitOut(ctx, in.Retry, err)
	}
	if in.AgentRef != nil { // a large spec travels by reference (stash.go)
		spec, err := a.agentSpec(ctx, in.Agent, in.AgentRef)
		if err != nil {
			return nil, a.waitOut(ctx, in.Retry, err)
		}
		in.Agent = spec
	}
	ctx, budget, err := a.withBudget(ctx, in.Budget, &in.Transcript, in.Retry) // nil without a budget (budget.go)
	if err != nil {
		return nil, a.waitOut(ctx, in.Retry, err)
	}
	ctx, prefix := withPrefixMeasure(ctx, tailKey(ctx, in.Transcript))
	stream := a.openStream(ctx, in) // nil unless the turn streams its text (stream.go)
	res, err := budget.settleTurn(a.modelTurn(ctx, in, stream))
	if res != nil && prefix.total > 0 { // the last request's shared prefix (prefix.go)
		res.PrefixBytes, res.RequestBytes = prefix.shared, prefix.total
	}
	if err == nil && in.LargeValues != nil { // large saved values go by reference (values.go)
		if err = a.storeLargeValues(ctx, in, res); err != nil {
			res = nil
		}
	}
	if err == nil { // never a result Temporal refuses, retried without end (toolargs.go)
		if err = checkResultSize(res); err != nil {
			res = nil
		}
	}
	err = budget.withSpent(a.waitOut(ctx, in.Retry, err)) // a failure carries what it spent (budget.go)
	stream.end(ctx, in, res, err, log.With(activity.GetLogger(ctx), "task_id", in.Task(), "turn", in.Turn))
	return res, err
}

// turnCall is one ModelTurn attempt: what its steps share.
type turnCall struct {
	a      *Activities
	in     ModelTurnInput
	agent  *contract.Agent // checked; its instructions filled by prepare
	stream *turnStream     // nil unless the turn streams its text
	logger log.Logger
	// durable waits for the entries the call writes (startPersist); nil:
	// they were written before.
	durable func() error
}

// waitDurable is durable, or nothing when there is none.
func (t *turnCall) waitDurable() error {
	if t.durable == nil {
		return nil
	}
	return t.durable()
}

// modelTurn runs the steps of one attempt: resume an answer an earlier
// attempt stored, make the entries durable and read the window, prepare the
// request, ask until the answer fits the schema (each call fitted to the
// model's context), store the answer.
func (a *Activities) modelTurn(ctx context.Context, in ModelTurnInput, stream *turnStream) (*ModelTurnResult, error) {
	ctx, stop := heartbeating(ctx)
	defer stop()
	logger := log.With(activity.GetLogger(ctx), "task_id", in.Task(), "turn", in.Turn)
	agent, err := contract.CheckAgent("agent", in.Agent)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrInvalidInput, nil)
	}
	if earlier, err := a.resumeStreamed(ctx, in, stream); err != nil || earlier != nil {
		return earlier, err // stream.go
	}
	// The inputs and stamps land while the window is built and the model
	// answers; the answer is stored and returned only once they have.
	fresh, durable, err := a.startPersist(ctx, in.Transcript, in.Entries)
	if err != nil {
		return nil, err
	}
	t := &turnCall{a: a, in: in, agent: agent, stream: stream, logger: logger, durable: durable}
	res, from, err := t.answer(ctx, fresh)
	if werr := durable(); werr != nil {
		// The window shown held entries that are not stored.
		a.once.Do(func() { a.windows, a.starts = newWindowCache(), newStartMemory() })
		a.windows.forget(tailKey(ctx, in.Transcript))
		return nil, werr // a storage fault first: retried, whatever the call did
	}
	if err != nil {
		return nil, err
	}
	if len(res.ToolCalls) > 0 {
		return res, nil // the workflow runs them, then calls the model again
	}
	if err := t.store(ctx, res, from); err != nil { // answer.go
		return nil, err
	}
	return res, nil
}

// answer builds the window and the request and asks the model; from is
// the window's start. Reading the conversation from the store waits for
// durable (window.go).
func (t *turnCall) answer(ctx context.Context, fresh map[int]contract.Message) (*ModelTurnResult, int, error) {
	w, err := t.a.readWindow(ctx, t.in, fresh, t.waitDurable) // window.go
	if err != nil {
		return nil, 0, err
	}
	req, err := t.prepare(ctx, w) // request.go
	if err != nil {
		return nil, 0, err
	}
	res, err := t.ask(ctx, req) // answer.go
	return res, w.from, err
}

// WriteEntries makes entries durable without a model call.
func (a *Activities) WriteEntries(ctx context.Context, in WriteEntriesInput) error {
	return a.persist(ctx, in.Transcript, in.Entries)
}

// persist writes committed inputs and stamps pending outputs. Both are
// idempotent, so retries and re-sent entries of a canceled turn are safe.
func (a *Activities) persist(ctx context.Context, k TranscriptKey, e Entries) error {
	_, err := a.persistEntries(ctx, k, e)
	return err
}

// persistParallelism bounds the concurrent blob writes of one call, as the
// transcript store bounds its own (8): enough to hide a blob store's latency.
const persistParallelism = 8

// persistEntries is persist returning the final entries by position.
func (a *Activities) persistEntries(ctx context.Context, k TranscriptKey, e Entries) (map[int]contract.Message, error) {
	fresh, durable, err := a.startPersist(ctx, k, e)
	if err != nil {
		return nil, err
	}
	return fresh, durable()
}

// startPersist reads the pending outputs the stamps name and starts
// writing the stamped outputs and the committed inputs. It returns the
// final entries by position at once, and durable, which waits for the
// writes: a model call runs while they land (its request needs only the
// entries, not their being stored), and nothing the call returns is
// returned before durable has succeeded. The writes are independent, so
// they run at once, at most persistParallelism at a time (a turn may
// commit a hundred queued inputs), and a failure does not stop the
// others. durable's error is that of the first failed entry in order
// (stamps, then writes), not the first to fail.
func (a *Activities) startPersist(ctx context.Context, k TranscriptKey, e Entries) (map[int]contract.Message, func() error, error) {
	stamped := make([]contract.Message, len(e.Stamps))
	if len(e.Stamps) > 0 {
		var g errgroup.Group
		g.SetLimit(persistParallelism)
		readErrs := make([]error, len(e.Stamps))
		for i, s := range e.Stamps {
			g.Go(func() error {
				m, err := a.Transcript.GetPending(ctx, k, s.Position, s.Turn)
				if err != nil {
					readErrs[i] = storageError(fmt.Sprintf("reading the output of turn %d", s.Turn), err)
					return readErrs[i]
				}
				m.CommittedAt = s.CommittedAt
				stamped[i] = m
				return nil
			})
		}
		if g.Wait() != nil {
			for _, err := range readErrs {
				if err != nil {
					return nil, nil, err
				}
			}
		}
	}
	out := make(map[int]contract.Message, len(e.Stamps)+len(e.Write))
	for i, s := range e.Stamps {
		out[s.Position] = stamped[i]
	}
	for _, w := range e.Write {
		out[w.Position] = w.Entry
	}
	if len(e.Stamps)+len(e.Write) == 0 {
		return out, func() error { return nil }, nil
	}

	errs := make([]error, len(e.Stamps)+len(e.Write))
	var g errgroup.Group
	g.SetLimit(persistParallelism)
	for i, s := range e.Stamps {
		g.Go(func() error {
			if err := a.Transcript.WriteAt(ctx, k, s.Position, stamped[i]); err != nil {
				errs[i] = storageError(fmt.Sprintf("stamping the output at %d", s.Position), err)
				return errs[i]
			}
			return nil
		})
	}
	for i, w := range e.Write {
		g.Go(func() error {
			if err := a.Transcript.WriteAt(ctx, k, w.Position, w.Entry); err != nil {
				errs[len(e.Stamps)+i] = storageError(fmt.Sprintf("writing entry %d", w.Position), err)
				return errs[len(e.Stamps)+i]
			}
			return nil
		})
	}
	var once sync.Once
	var result error
	durable := func() error {
		once.Do(func() {
			if g.Wait() != nil {
				for _, err := range errs {
					if err != nil {
						result = err
						return
					}
				}
			}
		})
		return result
	}
	return out, durable, nil
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
	return temporal.NewApplicationErrorWithOptions(msg, errModelUnavailable, opts)
}
