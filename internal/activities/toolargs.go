package activities

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
)

// Bounds on what a model call returns to the workflow. An activity's
// result is one Temporal payload, and Temporal refuses a payload over
// 2 MiB: the SDK then fails the attempt (TMPRL1103), the retry policy
// tries it again, the model answers the same, and the turn never ends,
// with nothing in status.retrying. So nothing the model writes reaches a
// result unbounded:
//
//   - one tool call's arguments hold at most MaxToolCallArgumentBytes
//     (100,000 bytes, the inline budget of one text part, as an answer's
//     text: longanswer.go). A save whose value the call keeps by reference
//     (values.go) counts as it is returned: the value's preview and
//     reference, not the value;
//   - all of a turn's tool calls (the earlier rounds', which every later
//     call's argument carries in its scratch, and this answer's), as JSON,
//     hold at most MaxTurnToolCallBytes (128 KiB), so neither this result
//     nor the next call's argument nears the limit however many rounds
//     the turn takes, and the calls leave room for their results in the
//     192 KiB the workflow keeps of a turn's exchange (maxScratchBytes:
//     past it, results are omitted);
//
// A response over either is never returned: the model is told which call,
// its size and the limit, and asked again (the refused calls are not sent
// back, a short placeholder stands in for them), within the turn's
// structuredAttempts calls shared with schema refusals and long answers
// (model_steps.go); past them the turn fails with a non-retryable MODEL_ERROR
// naming the limit. Last, a ModelTurn or Shape result is measured as JSON
// before it is returned: over MaxModelResultBytes (1 MiB, half of
// Temporal's limit) it is a non-retryable MODEL_ERROR naming what was too
// large, never a retry.
const (
	MaxToolCallArgumentBytes = contract.MaxInlineTextBytes
	MaxTurnToolCallBytes     = 128 << 10
	MaxModelResultBytes      = 1 << 20
)

// callsOverBound lists what makes a response's calls too large to return:
// each call whose arguments are over MaxToolCallArgumentBytes, then the
// turn's calls together over MaxTurnToolCallBytes. Empty: they fit.
func (t *turnCall) callsOverBound(calls []ToolCall) []string {
	var over []string
	size := 0
	for i, c := range calls {
		c.Arguments = t.carriedArguments(c)
		if n := len(c.Arguments); n > MaxToolCallArgumentBytes {
			what := fmt.Sprintf("the call of %q", clip(c.Name, 64))
			if len(calls) > 1 {
				what += fmt.Sprintf(" (call %d of %d)", i+1, len(calls))
			}
			over = append(over, fmt.Sprintf("%s has %d bytes of arguments, over the %d-byte limit of one call's arguments", what, n, MaxToolCallArgumentBytes))
		}
		size += encodedSize(c)
	}
	earlier := 0
	for _, s := range t.in.Scratch {
		for _, c := range s.ToolCalls {
			earlier += encodedSize(c)
		}
	}
	if len(over) == 0 && earlier+size > MaxTurnToolCallBytes {
		over = append(over, fmt.Sprintf("this turn's tool calls take %d bytes as JSON (this answer's %d, the turn's earlier calls' %d), over the %d-byte limit of one turn's tool calls",
			earlier+size, size, earlier, MaxTurnToolCallBytes))
	}
	return over
}

// carriedArguments are a call's arguments as the result will carry them:
// a save's value over InlineValueBytes is kept by reference by
// storeLargeValues (values.go), which leaves its preview and reference in
// its place (nothing is stored here).
func (t *turnCall) carriedArguments(c ToolCall) string {
	if c.Name != BuiltinSave || !t.in.Builtins || t.in.LargeValues == nil {
		return c.Arguments
	}
	args, err := rewriteSaveArgs(c.Arguments, nil, func(data []byte) (ValueRef, error) {
		h := sha256.Sum256(data)
		sum := hex.EncodeToString(h[:])
		return ValueRef{Stash: valueStashPrefix + sum, Bytes: len(data), SHA256: sum}, nil
	})
	if err != nil {
		return c.Arguments
	}
	return args
}

func encodedSize(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

// callsRefusedPlaceholder stands in the request for a response whose calls
// were refused: the calls themselves are the oversized thing.
func callsRefusedPlaceholder(calls []ToolCall) string {
	names := make([]string, 0, len(calls))
	for _, c := range calls {
		names = append(names, clip(c.Name, 64))
	}
	return fmt.Sprintf("[an answer calling %s, not shown: its tool calls were over the size limit, and none of them ran]", strings.Join(names, ", "))
}

// callsCorrection is what the model is told of calls over the bounds.
func callsCorrection(over []string) string {
	return fmt.Sprintf("Your tool calls were refused, and none of them ran: %s. One call's arguments may hold at most %d bytes, and all the tool calls of one turn at most %d bytes. "+
		"Call again with smaller arguments, passing a reference to the data (a file, a URL, an ID) or a summary instead of the data itself, or answer without the call.",
		strings.Join(over, "; "), MaxToolCallArgumentBytes, MaxTurnToolCallBytes)
}

// callsFailure is the turn's error when every call's tool calls were over
// the bounds.
func callsFailure(calls int, over []string) string {
	return fmt.Sprintf("the model's tool calls were over the runtime's bounds after %d calls (the last: %s); a tool call's arguments travel in the task's history, so one call's arguments hold at most %d bytes and one turn's tool calls %d: have the model pass a reference (a file, a URL, an ID) or a summary instead of the data itself",
		calls, strings.Join(over, "; "), MaxToolCallArgumentBytes, MaxTurnToolCallBytes)
}

// checkResultSize refuses a ModelTurn result too large to return, naming
// its largest part. Nothing the bounds above let through comes near; this
// is the last guard, so no path ends in a retry without end.
func checkResultSize(res *ModelTurnResult) error {
	if res == nil {
		return nil
	}
	n := encodedSize(res)
	if n <= MaxModelResultBytes {
		return nil
	}
	parts := []struct {
		name string
		size int
	}{
		{"the answer (output)", encodedSize(res.Output)},
		{"the tool calls", encodedSize(res.ToolCalls)},
		{"the capabilities offered", encodedSize(res.Offered)},
		{"the values kept by reference", encodedSize(res.ValueRefs)},
	}
	largest := parts[0]
	for _, p := range parts[1:] {
		if p.size > largest.size {
			largest = p
		}
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"the model call's result is %d bytes as JSON, over the %d bytes one may return (Temporal refuses a payload over 2 MiB, and the call would be tried again without end); the largest part is %s, %d bytes",
		n, MaxModelResultBytes, largest.name, largest.size), contract.ErrModel, nil)
}

// checkShapeSize is checkResultSize for the shaping pass, whose result
// holds the output model's answer twice (as text and as the object).
func checkShapeSize(res *ShapeResult) error {
	if res == nil {
		return nil
	}
	if n := encodedSize(res); n > MaxModelResultBytes {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"the output model's answer is %d bytes, and the shaping result that holds it %d bytes as JSON, over the %d bytes one may return (Temporal refuses a payload over 2 MiB, and the call would be tried again without end): ask for a smaller result (output.instructions, output.schema)",
			len(res.Raw), n, MaxModelResultBytes), contract.ErrModel, nil)
	}
	return nil
}
