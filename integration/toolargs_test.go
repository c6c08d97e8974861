package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mcp/mcptest"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// A tool call with huge arguments (docs/contract.md#limits, "a huge
// tool-call argument wedges the turn"): a model answer calling a tool with
// 3 MB of arguments made the model activity's result pass Temporal's 2 MiB
// payload limit, so the activity could never complete and was tried again
// without end, the task `working` for ever. Now such a call is never
// returned to the workflow: the model is told which call, its size and the
// limit, and asked again, within the turn's 3 model calls; then the turn
// fails with a MODEL_ERROR naming the limit.

// hugeArguments is a tool call's arguments of about 3 MB.
func hugeArguments() string {
	return `{"message":"` + strings.Repeat("x", 3<<20) + `"}`
}

// refusedCall says whether the last message is the runtime's refusal of
// oversized tool-call arguments.
func refusedCall(c testmodel.Call) bool {
	last := c.Messages[len(c.Messages)-1]
	return last.Role == "user" && strings.Contains(last.Content, "Your tool calls were refused")
}

// The model calls echo with 3 MB, is told why that is refused, calls it
// again with a short message and answers with its result: the task
// answers, and the tool ran once, with the short arguments.
func TestAHugeToolCallArgumentIsRefusedAndAskedAgain(t *testing.T) {
	h := newHarness(t)
	server := mcptest.New(t)
	startMCPWorker(h, server)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		switch {
		case refusedCall(c):
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "call_1", Name: "everything__echo", Arguments: `{"message":"short"}`}}}
		case hasToolResult(c):
			return mcpModel(c) // the tool's result: "done: ..."
		}
		return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "call_0", Name: "everything__echo", Arguments: hugeArguments()}}}
	})

	run := startTask(t, h, "huge-args-again", map[string]any{"agent": mcpAgent("everything", nil), "mode": "single",
		"input": text("echo the whole file")})
	require.NoError(t, run.Get(ctxT(t, 90*time.Second), nil), "the task answers instead of staying working")

	require.Contains(t, lastText(t, "huge-args-again"), "Echo: short")
	require.Equal(t, 1, server.Calls("echo"), "the refused call never ran")
	calls := h.model.Calls()
	require.Len(t, calls, 3, "the huge call, the call asked again, the answer")
	correction := calls[1].Messages[len(calls[1].Messages)-1].Content
	for _, want := range []string{`"everything__echo"`, fmt.Sprintf("%d bytes", len(hugeArguments())), "at most 100000 bytes"} {
		require.Contains(t, correction, want)
	}
	require.Less(t, len(calls[1].Raw), 100_000, "the huge arguments are not sent back to the model")
}

// A model that keeps calling with huge arguments fails the task with a
// MODEL_ERROR that names the limit, after the turn's 3 model calls; the
// tool never runs.
func TestAHugeToolCallArgumentEveryTimeFailsTheTask(t *testing.T) {
	h := newHarness(t)
	server := mcptest.New(t)
	startMCPWorker(h, server)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: fmt.Sprintf("call_%d", c.Seq), Name: "everything__echo", Arguments: hugeArguments()}}}
	})

	run := startTask(t, h, "huge-args-fail", map[string]any{"agent": mcpAgent("everything", nil), "mode": "single",
		"input": text("echo the whole file")})
	err := run.Get(ctxT(t, 90*time.Second), nil)
	require.Error(t, err, "the task fails instead of staying working")
	require.Equal(t, contract.ErrModel, errType(err), "%v", err)
	for _, want := range []string{"100000-byte limit", `"everything__echo"`, "after 3 calls"} {
		require.Contains(t, err.Error(), want)
	}
	require.Equal(t, 3, h.model.CallCount())
	require.Equal(t, 0, server.Calls("echo"))
}
