package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/transcript"
)

// The steps of a ModelTurn attempt (model.go), in the order it takes them.

// checkAgent checks the agent the turn runs.
func (t *turnCall) checkAgent() error {
	agent, err := contract.CheckAgent("agent", t.in.Agent)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrInvalidInput, nil)
	}
	t.agent = agent
	return nil
}

// storedAnswer is the answer an earlier attempt of this streamed turn
// stored (stream.go), nil when there is none or the turn does not stream:
// this attempt's stream starts again with it, and the transcript holds it.
func (t *turnCall) storedAnswer(ctx context.Context) (*ModelTurnResult, error) {
	if t.stream == nil {
		return nil, nil
	}
	earlier, ok, err := t.a.earlierAnswer(ctx, t.in)
	if err != nil || !ok {
		return nil, err
	}
	if _, err := t.a.Transcript.PutPending(transcript.PerRun(ctx), t.in.Transcript, t.in.End, t.in.Turn, contract.Message{Type: contract.TypeOutput, TaskIO: earlier.Output}); err != nil {
		return nil, storageError("storing the output", err)
	}
	t.stream.replay(contract.TextOf(earlier.Output))
	return earlier, nil
}

// persist starts writing the inputs the call commits and stamping the
// outputs it finalises (entries.go), and returns the final entries by
// position at once: they land while the window is built and the model
// answers, and the answer is stored and returned only once they have
// (landed).
func (t *turnCall) persist(ctx context.Context) (map[int]contract.Message, error) {
	fresh, durable, err := t.a.startPersist(ctx, t.in.Transcript, t.in.Entries)
	if err != nil {
		return nil, err
	}
	t.durable = durable
	return fresh, nil
}

// waitDurable waits for the entries persist started writing, if it did.
func (t *turnCall) waitDurable() error {
	if t.durable == nil {
		return nil
	}
	return t.durable()
}

// turnWindow is what of the conversation a turn shows the model.
type turnWindow struct {
	from    int                // the position of entries[0]
	entries []contract.Message // as stored (a continuation's carried files not yet applied)
	keep    int                // the newest entries fitRequest may not leave out
}

// window reads the window the turn shows: what fits the agent's context
// budget, but never less than the newest entry nor less than the inputs the
// call commits; from the worker's cache when it can (window.go), from a
// fixed start moved a block at a time (window_block.go). fresh are the
// entries persist started writing: every read of the store waits for them
// first, so it never misses them.
func (t *turnCall) window(ctx context.Context, fresh map[int]contract.Message) (turnWindow, error) {
	budget := t.in.Agent.ContextBudgetBytes()
	from, window, err := t.a.window(ctx, t.in.Transcript, fresh, t.in.End, budget, t.waitDurable)
	if err != nil {
		if derr := t.waitDurable(); derr != nil {
			return turnWindow{}, derr // already a storage error
		}
		return turnWindow{}, storageError("reading the conversation window", err)
	}
	if len(window) == 0 && t.in.End > 0 || from > t.in.TurnFrom && t.in.TurnFrom < t.in.End {
		if err := t.waitDurable(); err != nil { // read below
			return turnWindow{}, err
		}
	}
	// A fixed start, moved a block at a time.
	hint, key := t.in.WindowFrom, tailKey(ctx, t.in.Transcript)
	if hint == 0 {
		hint = t.a.starts.get(key)
	}
	if !t.a.SlideWindow {
		from, window = stableStart(from, window, hint, budget)
		t.a.starts.set(key, from)
	}
	if len(window) == 0 && t.in.End > 0 {
		// Even the newest entry is over the budget: show it alone, and let
		// the model's own limit speak.
		if window, err = t.a.Transcript.Read(ctx, t.in.Transcript, t.in.End-1, t.in.End); err != nil {
			return turnWindow{}, storageError("reading the newest entry", err)
		}
		from = t.in.End - 1
	}
	if from > t.in.TurnFrom && t.in.TurnFrom < t.in.End {
		// The inputs this call commits are always shown: committed_at is
		// the read receipt (docs/contract.md). Only older entries are left out.
		if window, err = t.a.Transcript.Read(ctx, t.in.Transcript, t.in.TurnFrom, t.in.End); err != nil {
			return turnWindow{}, storageError("reading the inputs this turn commits", err)
		}
		from = t.in.TurnFrom
	}
	keep := 0
	if t.in.TurnFrom < t.in.End {
		keep = t.in.End - max(from, t.in.TurnFrom)
	}
	return turnWindow{from: from, entries: window, keep: keep}, nil
}

// turnRequest is a turn's request as built, before it is fitted to the
// model's context (shrink.go): full keeps everything the window shows.
type turnRequest struct {
	full    llm.Request
	entries []int // the index in full.Messages of each window entry
	keep    int   // the newest entries fitRequest may not leave out
	from    int   // the window's first position
}

// request builds the turn's request from the window (request.go): the
// instructions filled, a continuation's carried files shown as this task
// has them, the capabilities offered, and the text streamed when the turn
// streams.
func (t *turnCall) request(ctx context.Context, w turnWindow) (turnRequest, error) {
	t.agent.Spec.Instructions = FillInstructions(t.agent.Spec.Instructions, t.in.Variables, t.in.Secrets)
	carried, err := t.a.loadCarried(ctx, t.in.Transcript)
	if err != nil {
		return turnRequest{}, err
	}
	shown := w.entries
	if len(carried) > 0 { // a continuation's earlier files, from its own space
		shown = make([]contract.Message, len(w.entries))
		for i, m := range w.entries {
			shown[i] = carried.apply(m)
		}
	}
	full, entries, err := t.a.buildRequest(ctx, t.agent, t.in.Task(), w.from, shown, t.in.Scratch, t.in.OwnFrom, nil)
	if err != nil {
		return turnRequest{}, err
	}
	at := -1 // before the inputs this call commits
	if p := t.in.TurnFrom - w.from; p >= 0 && p < len(entries) {
		at = entries[p]
	} else if p >= len(entries) {
		// It commits none (a continuation answering the inputs its earlier
		// task left unanswered): before the newest inputs all the same.
		k := len(w.entries)
		for k > 0 && w.entries[k-1].Type == contract.TypeInput {
			k--
		}
		if k < len(entries) {
			at = entries[k]
		}
	}
	if s := t.in.Scratch; len(s) > 0 && s[0].At > t.in.TurnFrom {
		// A capability round whose inputs came before the exchange: after
		// them, before the exchange, so the model reads the results last.
		if p := s[0].At - 1 - w.from; p >= 0 && p < len(entries) {
			at = entries[p] + 1
		}
	}
	full.Messages, entries = withRecall(full.Messages, entries, t.in.Recall, at)
	if full.Tools, err = t.a.offeredTools(ctx, t.in, w.from, w.entries, t.waitDurable); err != nil {
		return turnRequest{}, err
	}
	if t.in.Builtins {
		full.Tools = append(full.Tools, builtinTools...)
	}
	if t.stream != nil {
		full.OnText = t.stream.Text
	}
	return turnRequest{full: full, entries: entries, keep: w.keep, from: w.from}, nil
}

// ask calls the model until its answer fits: each call is fitted to the
// model's context (shrink.go), and an answer that does not fit the agent's
// schema is shown back to the model with what was wrong, for at most
// structuredAttempts calls. An answer whose text is over one inline part
// (contract.MaxInlineTextBytes) on an agent that cannot take it by
// reference (no mount) is refused the same way: the model is told its size
// and the limit and asked for a shorter one, within the same bound
// (longanswer.go). An answer that calls capabilities is returned
// at once, without an output (the workflow runs them), unless its calls
// are over the size bounds (toolargs.go): then it is refused the same way.
func (t *turnCall) ask(ctx context.Context, req turnRequest) (*ModelTurnResult, error) {
	res := &ModelTurnResult{WindowFrom: req.from, Offered: []string{}}
	for _, tool := range req.full.Tools {
		res.Offered = append(res.Offered, tool.Name)
	}
	full := req.full
	fit := t.a.newContextFit(t.agent.Spec)
	for {
		resp, sent, err := fit.complete(ctx, t.a, full, req.entries, req.keep, t.logger)
		if err != nil {
			return nil, err
		}
		res.Calls++
		res.WindowFrom = req.from + sent.Dropped
		res.Usage.Usage = res.Usage.Add(resp.Usage)
		res.StopReason, res.Model = string(resp.StopReason), resp.Model
		if len(resp.ToolCalls) > 0 {
			calls := make([]ToolCall, 0, len(resp.ToolCalls))
			for _, tc := range resp.ToolCalls {
				calls = append(calls, ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments, Signature: tc.Signature})
			}
			if over := t.callsOverBound(calls); len(over) > 0 {
				// Too large to return (toolargs.go): asked again, within
				// the same bound of calls as an answer that does not fit.
				if res.Calls >= structuredAttempts {
					return nil, temporal.NewNonRetryableApplicationError(callsFailure(res.Calls, over), contract.ErrModel, nil)
				}
				t.logger.Warn("tool calls over the size bounds, asking again", "why", strings.Join(over, "; "))
				if t.stream != nil && t.stream.w != nil && t.stream.w.SentText() { // the refused answer's text was sent: the next starts afresh
					t.stream.again(ctx, "the answer's tool calls were over the size bounds; the model is asked again")
				}
				full.Messages = append(full.Messages,
					llm.Message{Role: llm.RoleAssistant, Content: callsRefusedPlaceholder(calls)},
					llm.Message{Role: llm.RoleUser, Content: callsCorrection(over)})
				continue
			}
			res.ToolCalls = calls
			t.logger.Info("model called capabilities", "calls", len(res.ToolCalls))
			return res, nil
		}
		out, violations, err := t.output(ctx, resp)
		if err != nil {
			return nil, err
		}
		if len(violations) == 0 {
			if n := overInline(out); n > 0 {
				// docs/content.md: never split or cut. Asked again, within the
				// same bound of calls as an answer that does not fit.
				if res.Calls >= structuredAttempts {
					return nil, temporal.NewNonRetryableApplicationError(tooLongFailure(res.Calls, n), contract.ErrModel, nil)
				}
				t.logger.Warn("answer over the inline budget, asking again", "bytes", n, "limit", contract.MaxInlineTextBytes)
				if t.stream != nil { // the refused answer's text was sent: the next starts afresh
					t.stream.again(ctx, fmt.Sprintf("the answer was %d bytes, over the %d-byte limit of one message; the model is asked again for a shorter one", n, contract.MaxInlineTextBytes))
				}
				full.Messages = append(full.Messages,
					llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("[an answer of %d bytes, not shown: over the limit]", n)},
					llm.Message{Role: llm.RoleUser, Content: tooLongCorrection(t.agent, n)})
				continue
			}
			res.Output = out
			return res, nil
		}
		msg := contract.JoinViolations(violations)
		if res.Calls >= structuredAttempts {
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("the model's answer did not fit the agent's schema after %d calls: %s", res.Calls, msg), contract.ErrModel, nil)
		}
		t.logger.Warn("output refused, asking again", "violations", msg)
		if t.stream != nil { // the refused answer's text was sent: the next starts afresh
			t.stream.again(ctx, "the answer did not fit the task's schema ("+msg+"); the model is asked again")
		}
		full.Messages = append(full.Messages,
			llm.Message{Role: llm.RoleAssistant, Content: resp.Text},
			llm.Message{Role: llm.RoleUser, Content: "Your answer was refused: " + msg + ". Answer again with one JSON object that has every required key and fits the schema."})
	}
}

// output reads the model's answer into the turn's output: parsed and
// checked against the schema, its attachments stated in the mount, a long
// text made a file (longanswer.go). Violations say why it is refused.
func (t *turnCall) output(ctx context.Context, resp llm.Response) (contract.TaskIO, []contract.Violation, error) {
	out, violations := parseOutput(t.agent, resp)
	if len(violations) == 0 {
		var err error
		if out, violations, err = t.a.attach(ctx, t.agent, t.in.Task(), out); err != nil {
			return contract.TaskIO{}, nil, err
		}
	}
	if len(violations) > 0 {
		return contract.TaskIO{}, violations, nil
	}
	out, err := t.a.longAnswerToFile(ctx, t.agent, t.in, out)
	return out, nil, err
}

// landed waits for the entries persist started writing, and returns err
// unless they failed to land: a storage fault comes first (retried,
// whatever the steps since did), and the window shown held entries that
// are not stored, so the worker's tail of it is dropped.
func (t *turnCall) landed(ctx context.Context, err error) error {
	if werr := t.waitDurable(); werr != nil {
		t.a.once.Do(func() { t.a.windows, t.a.starts = newWindowCache(), newStartMemory() })
		t.a.windows.forget(tailKey(ctx, t.in.Transcript))
		return werr
	}
	return err
}

// store keeps the turn's answer as the pending output of its position and
// turn (and, for a streamed turn, for later attempts to replay first). res
// takes the stored output: an earlier attempt's answer, when one was
// stored, since the transcript has one answer per turn.
func (t *turnCall) store(ctx context.Context, res *ModelTurnResult, from int) error {
	if b, _ := json.Marshal(res.Output); len(b) > MaxOutputBytes {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the model's answer is %d bytes, more than the %d an output may hold; lower the agent's maxTokens", len(b), MaxOutputBytes), contract.ErrModel, nil)
	}
	if t.budget != nil { // the units travel with a streamed answer a later attempt may replay (budget.go)
		res.Usage.Units = t.budget.unitsUsed()
	}
	if t.stream != nil {
		if err := t.a.storeStreamed(ctx, t.in, res); err != nil {
			return err
		}
	}
	// The pending output is this run's: one that a run a reset replaced
	// stored for the same position and turn gives way (transcript.PerRun).
	pending := contract.Message{Type: contract.TypeOutput, TaskIO: res.Output}
	stored, err := t.a.Transcript.PutPending(transcript.PerRun(ctx), t.in.Transcript, t.in.End, t.in.Turn, pending)
	if err != nil {
		return storageError("storing the output", err)
	}
	res.Output = stored.TaskIO
	t.logger.Info("model answered", "model", res.Model, "stop_reason", res.StopReason, "calls", res.Calls,
		"window_from", from, "input_tokens", res.Usage.InputTokens, "output_tokens", res.Usage.OutputTokens)
	return nil
}
