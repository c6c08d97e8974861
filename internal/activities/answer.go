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

// ask calls the model until its answer fits the agent's schema: a refused
// answer is shown back to the model with what was wrong, for at most
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
		res.Usage.InputTokens += resp.Usage.InputTokens
		res.Usage.OutputTokens += resp.Usage.OutputTokens
		res.Usage.CacheReadTokens += resp.Usage.CacheReadTokens
		res.Usage.CacheWriteTokens += resp.Usage.CacheWriteTokens
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
				// Seed 001: never split or cut. Asked again, within the
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

// store keeps the turn's answer as the pending output of its position and
// turn (and, for a streamed turn, for later attempts to replay first). res
// takes the stored output: an earlier attempt's answer, when one was
// stored, since the transcript has one answer per turn.
func (t *turnCall) store(ctx context.Context, res *ModelTurnResult, from int) error {
	if b, _ := json.Marshal(res.Output); len(b) > MaxOutputBytes {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the model's answer is %d bytes, more than the %d an output may hold; lower the agent's maxTokens", len(b), MaxOutputBytes), contract.ErrModel, nil)
	}
	if g := guardOf(ctx); g != nil { // the units travel with a streamed answer a later attempt may replay (budget.go)
		res.Usage.Units = g.unitsUsed()
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

// parseOutput reads the model's answer into an output TaskIO and lists what
// keeps it from being one.
func parseOutput(a *contract.Agent, resp llm.Response) (contract.TaskIO, []contract.Violation) {
	if a.Spec.JSON {
		return parseJSONAnswer(a, resp.Text)
	}
	if !structured(a) {
		return contract.TaskIO{Message: textMessage(resp.Text)}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(resp.Text)), &obj); err != nil || obj == nil {
		return contract.TaskIO{}, []contract.Violation{{Path: "/", Message: "the answer is not one JSON object"}}
	}
	var text string
	if raw, ok := obj[contract.KeyMessage]; !ok {
		return contract.TaskIO{}, []contract.Violation{{Path: "/message", Message: "missing: the reply text goes under \"message\""}}
	} else if err := json.Unmarshal(raw, &text); err != nil {
		return contract.TaskIO{}, []contract.Violation{{Path: "/message", Message: "must be a string"}}
	}
	delete(obj, contract.KeyMessage)
	parts := textMessage(text)
	if a.Spec.Mount != nil {
		if raw, ok := obj[keyAttachments]; ok {
			var refs []string
			if err := json.Unmarshal(raw, &refs); err != nil {
				return contract.TaskIO{}, []contract.Violation{{Path: "/" + keyAttachments, Message: "must be a list of file references"}}
			}
			for _, r := range refs {
				ref := r
				parts = append(parts, contract.ContentPart{MimeType: mimeOf(ref), File: &ref})
			}
			delete(obj, keyAttachments)
		}
	}
	if vs := contract.CheckOutput(a, obj); len(vs) > 0 {
		return contract.TaskIO{}, vs
	}
	if len(obj) == 0 {
		obj = nil
	}
	return contract.TaskIO{Message: parts, Values: obj}, nil
}

// parseJSONAnswer checks a JSON agent's answer: one JSON object, fitting
// the agent's schema when it has one. The object stays the output's text.
func parseJSONAnswer(a *contract.Agent, text string) (contract.TaskIO, []contract.Violation) {
	text = strings.TrimSpace(text)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &obj); err != nil || obj == nil {
		return contract.TaskIO{}, []contract.Violation{{Path: "/", Message: "the answer is not one JSON object"}}
	}
	if a.Answer != nil {
		if vs := a.Answer.Validate(obj); len(vs) > 0 {
			return contract.TaskIO{}, vs
		}
	}
	return contract.TaskIO{Message: textMessage(text)}, nil
}
