package integration

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/starter"
)

// Client capabilities (docs/ag-ui.md#frontend-tools): a tool the caller's
// front end runs. The test model calls "locate" as many times as the
// user's message says ("locate; locate"), the second call's arguments not
// fitting its parameters; once every call has a result it answers "done: "
// and the results.
func locateModel(c testmodel.Call) testmodel.Reply {
	ms := c.Messages
	if last := ms[len(ms)-1]; last.Role == "tool" {
		var results []string
		for i := len(ms) - 1; i >= 0 && ms[i].Role == "tool"; i-- {
			results = append([]string{ms[i].Content}, results...)
		}
		return testmodel.Reply{Text: "done: " + strings.Join(results, " | ")}
	}
	var calls []testmodel.ToolCall
	for i, part := range strings.Split(ms[len(ms)-1].Content, ";") {
		if strings.TrimSpace(part) != "locate" {
			continue
		}
		args := `{"precise":true}`
		if i == 1 {
			args = `{"precise":"very"}`
		}
		calls = append(calls, testmodel.ToolCall{ID: fmt.Sprintf("call_%d_%d", c.Seq, i), Name: "locate", Arguments: args})
	}
	if len(calls) == 0 {
		return testmodel.Reply{Text: "echo: " + ms[len(ms)-1].Content}
	}
	return testmodel.Reply{ToolCalls: calls}
}

func locateAgent() map[string]any {
	a := agent("a")
	a["capabilities"] = []any{map[string]any{"name": "locate", "kind": "client", "description": "Where the user is, from their browser",
		"parameters": map[string]any{"type": "object", "required": []string{"precise"}, "properties": map[string]any{"precise": map[string]any{"type": "boolean"}}}}}
	return a
}

// A client capability's call waits as an approval does, listed with its
// call ID and client: true; approving it needs its result, which the
// model reads as the call's result (a call whose arguments do not fit is
// answered at once). A refusal tells the model the client did not run it,
// and why.
func TestApprovalOfAClientCapabilityCarriesItsResult(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	var offered atomic.Bool
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		offered.Store(offered.Load() || slices.Contains(c.Tools, "locate"))
		return locateModel(c)
	})
	id := "client-capability"
	startTask(t, h, id, map[string]any{"agent": locateAgent(), "input": text("locate; locate")})
	waitPending(t, id, 1)
	require.True(t, offered.Load(), "the model is offered the client capability")
	as := approvalsOf(t, id)
	require.Len(t, as, 1)
	require.True(t, as[0].Client)
	require.Equal(t, "call_1_0", as[0].CallID)
	require.JSONEq(t, `{"precise":true}`, string(as[0].Arguments))

	_, err := decide(t, id, "t1.c1", true, "")
	require.Equal(t, contract.ErrInvalidInput, errType(err), "%v", err)
	require.Contains(t, err.Error(), `approve it with its "result"`)

	c := starter.New(sdk, h.queue)
	a, err := c.Answer(ctxT(t, 30*time.Second), id, "t1.c1", `{"city":"Lyon"}`, "browser")
	require.NoError(t, err)
	require.True(t, a.Decision.Approve)
	require.Equal(t, "browser", a.Decision.By)
	waitOutputs(t, id, 1)
	got := lastText(t, id)
	require.True(t, strings.HasPrefix(got, `done: {"city":"Lyon"} | error: the arguments do not fit "locate"'s parameters`), got)
	again, err := c.Answer(ctxT(t, 30*time.Second), id, "t1.c1", `{"city":"Lyon"}`, "browser")
	require.NoError(t, err, "the same answer again is the first one's")
	require.Equal(t, a.Decision.DecidedAt, again.Decision.DecidedAt)

	// The next turn's call is refused: the model reads that the client did
	// not run it, and why.
	_, err = sendUpdate(t, id, text("locate"))
	require.NoError(t, err)
	waitPending(t, id, 1)
	no := false
	_, err = c.Decide(ctxT(t, 30*time.Second), id, contract.DecideArgs{ID: "t2.c1", Approve: &no, Reason: "the user closed the page"})
	require.NoError(t, err)
	waitOutputs(t, id, 2)
	require.Equal(t, `done: error: the client did not run this call of "locate" (the user closed the page)`, lastText(t, id))
	recordHistory(t, id, "", "approval-client-capability")
}
