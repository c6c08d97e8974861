package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/transcript"
)

// A streamed turn (StartArgs stream) publishes the model's text to the
// broker while the model writes it: text events, then one done or error
// event. Nothing of it enters Temporal's history, so a streamed turn has as
// many history events as any other. Streaming is best effort: a broker
// fault never fails the turn (the answer is durable either way; readers
// fall back to the run's messages).
//
// Retries never splice two answers' text: an attempt that fails after
// sending text ends its answer with an interruption (an error event
// stream_interrupted in the broker; the next attempt's broker.Open adds
// one when the failed attempt could not), then the new attempt streams the
// turn's next answer from its start, under the next answer number. The
// interruption is not the turn's error: the Tasks API ends the streams that
// carried the cut answer there (cut off, in the seed's words) and serves
// the next answer whole to the reconnect. An attempt whose predecessor had
// already stored the answer streams that stored answer instead of asking
// the model again, so what was streamed last is what the task records.

const (
	// streamPublishTimeout bounds the final publish of an attempt.
	streamPublishTimeout = 5 * time.Second
	// streamOpenTimeout bounds reading the run's last event at the start:
	// a broker that is away delays no model call by more.
	streamOpenTimeout = 3 * time.Second
)

// streamedAnswer is a streamed turn's answer, stored once beside the
// transcript before the output is: a later attempt replays it.
type streamedAnswer struct {
	Output     contract.TaskIO `json:"output"`
	StopReason string          `json:"stop_reason"`
	Model      string          `json:"model"`
	Usage      Usage           `json:"usage"`
	Calls      int             `json:"calls"`
}

func streamedName(pos, turn int) string { return fmt.Sprintf("streamed-%010d-turn-%d", pos, turn) }

// turnStream is one ModelTurn attempt's events, at the activity's Temporal
// attempt of the turn's step. A call asked again for a refused answer
// keeps the attempt: the interruption before it parts the two answers, and
// its writer numbers the new answer (broker.Event.Answer).
type turnStream struct {
	b     *broker.Broker
	runID string
	at    broker.Position
	// wrapped: the reply wraps the model's text in a JSON object
	// (exposes, mount), so its text events are marked as the model's.
	wrapped bool
	w       *broker.Writer // nil once the broker refused: nothing more is streamed
	// finished: an earlier attempt streamed this turn to its done; this
	// one answers with the stored answer and publishes nothing.
	finished bool
}

// openStream opens this attempt's events, or returns nil when the turn does
// not stream or the worker has no broker. A step after a tool round first
// publishes the round's results (stepFacts).
func (a *Activities) openStream(ctx context.Context, in ModelTurnInput) *turnStream {
	if !in.Stream || a.Broker == nil {
		return nil
	}
	s := &turnStream{b: a.Broker, runID: in.Task(),
		at:      broker.Position{Turn: in.Turn, Step: in.Step, Attempt: int(activity.GetInfo(ctx).Attempt)},
		wrapped: len(in.Agent.Exposes) > 0 || in.Agent.Mount != nil}
	s.open(ctx)
	if s.w != nil && in.Step > 0 {
		if facts := callFacts(in); len(facts) > 0 {
			pctx, cancel := context.WithTimeout(ctx, streamPublishTimeout)
			if err := s.w.Facts(pctx, facts); err != nil {
				activity.GetLogger(ctx).Warn("the tool calls' results are not streamed: the broker refused", "task_id", s.runID, "turn", in.Turn, "error", err)
			}
			cancel()
		}
	}
	return s
}

func (s *turnStream) open(ctx context.Context) {
	octx, cancel := context.WithTimeout(ctx, streamOpenTimeout)
	defer cancel()
	w, err := s.b.OpenAt(octx, s.runID, s.at)
	if err != nil {
		if !errors.Is(err, broker.ErrStale) { // a stale attempt's result is dropped anyway
			activity.GetLogger(ctx).Warn("the turn's text is not streamed: the broker refused", "task_id", s.runID, "turn", s.at.Turn, "error", err)
		}
		w = nil
	}
	if w != nil && s.wrapped {
		w.SetWrapped()
	}
	s.w = w
}

// Text streams a delta of the model's answer.
func (s *turnStream) Text(delta string) {
	if s.w != nil {
		s.w.Text(delta)
	}
}

// replay streams an answer an earlier attempt stored, unless that attempt
// already streamed it to its done (then it died before Temporal heard of it).
func (s *turnStream) replay(answer string) {
	if s.w != nil && s.w.TurnDone() {
		s.finished = true
		return
	}
	s.Text(answer)
}

// again ends this call's answer with its interruption and starts the next
// call's: the model is asked again for a refused answer.
func (s *turnStream) again(ctx context.Context, why string) {
	if s.w != nil {
		pctx, cancel := context.WithTimeout(ctx, streamPublishTimeout)
		_ = s.w.Fail(pctx, broker.CodeStreamInterrupted, why)
		cancel()
		s.w.Close()
	}
	s.open(ctx)
}

// earlierAnswer is the answer an earlier attempt of this streamed turn
// stored, if one did. One that a run a reset replaced stored under the same
// name answered other inputs: it is not found (transcript.PerRun).
func (a *Activities) earlierAnswer(ctx context.Context, in ModelTurnInput) (*ModelTurnResult, bool, error) {
	var s streamedAnswer
	err := a.Transcript.GetOnce(transcript.PerRun(ctx), in.Transcript, streamedName(in.End, in.Turn), &s)
	if errors.Is(err, transcript.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, storageError("reading the turn's stored answer", err)
	}
	return &ModelTurnResult{Output: s.Output, StopReason: s.StopReason, Model: s.Model, Usage: s.Usage, Calls: s.Calls, Offered: []string{}}, true, nil
}

// storeStreamed keeps a streamed turn's answer for later attempts; an
// answer this run stored first wins (returned), one a replaced run stored
// gives way.
func (a *Activities) storeStreamed(ctx context.Context, in ModelTurnInput, res *ModelTurnResult) error {
	var stored streamedAnswer
	s := streamedAnswer{Output: res.Output, StopReason: res.StopReason, Model: res.Model, Usage: res.Usage, Calls: res.Calls}
	adopted, err := a.Transcript.PutOnce(transcript.PerRun(ctx), in.Transcript, streamedName(in.End, in.Turn), s, &stored)
	if err != nil {
		return storageError("storing the turn's answer", err)
	}
	if adopted {
		res.Output, res.StopReason, res.Model, res.Usage, res.Calls = stored.Output, stored.StopReason, stored.Model, stored.Usage, stored.Calls
	}
	return nil
}

// end publishes how this attempt ended: done with the answer; the turn's
// error when no retry follows; stream_interrupted when a retry follows text
// already sent.
func (s *turnStream) end(ctx context.Context, in ModelTurnInput, res *ModelTurnResult, err error, logger log.Logger) {
	if s == nil || s.w == nil {
		return
	}
	w := s.w
	if s.finished {
		w.Close()
		return
	}
	defer w.Close()
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), streamPublishTimeout)
	defer cancel()
	var perr error
	var ae *temporal.ApplicationError
	switch {
	case err == nil && res.BudgetShort != nil:
		// The budget stopped the call: the run waits for a raise, and the
		// call made then streams its answer (cut off here, as a retry is).
		if s.at.Step > 0 {
			perr = w.Publish(pctx, broker.WithData(broker.Event{Type: broker.TypeBudgetWaiting}, broker.BudgetWaiting{Needs: *res.BudgetShort}))
		}
	case err == nil && len(res.ToolCalls) == 0:
		var answer json.RawMessage
		if in.Agent.JSON {
			answer = json.RawMessage(contract.TextOf(res.Output))
		}
		perr = w.Done(pctx, res.StopReason, res.Usage.Usage, answer)
	case err == nil:
		// The workflow runs the calls next; the step's answer ends with them.
		perr = w.ToolCalls(pctx, toolCallEvents(res.ToolCalls))
	case ctx.Err() == nil && errors.As(err, &ae) && ae.NonRetryable():
		perr = w.Fail(pctx, ae.Type(), ae.Message())
	case w.SentText():
		// A retry follows, or the turn was canceled (the activity cannot
		// tell a cancel from a worker shutting down): either way this
		// text is not the answer.
		perr = w.Fail(pctx, broker.CodeStreamInterrupted, "the model call stopped after its text began (it is tried again, unless the turn was canceled); the answer starts again")
	}
	if perr == nil {
		perr = w.Err()
	}
	if perr != nil {
		logger.Warn("the turn's events did not all reach the broker", "error", perr)
	}
}
