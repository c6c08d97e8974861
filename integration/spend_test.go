package integration

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/starter"
)

// Durable budgets (docs/budgets.md) on the real worker, the real server and
// the test model over HTTP. test/echo is priced by the built-in catalogue
// (0.001 units an input token, 0.002 an output token).

// fixedUsage makes the test model report the same usage for every call.
func fixedUsage(h *harness, prompt, completion int) {
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		r := testmodel.Echo(c)
		r.PromptTokens, r.CompletionTokens = prompt, completion
		return r
	})
}

func raiseBudget(t *testing.T, id string, units int64) (contract.BudgetStatus, error) {
	t.Helper()
	h, err := sdk.UpdateWorkflow(ctxT(t, 30*time.Second), client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: contract.UpdateRaiseBudget,
		Args: []any{contract.RaiseBudgetArgs{Amounts: contract.Amounts{Units: contract.Amount(units)}, By: "test"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return contract.BudgetStatus{}, err
	}
	var st contract.BudgetStatus
	err = h.Get(ctxT(t, 30*time.Second), &st)
	return st, err
}

// A task whose budget.units cannot cover the next call's worst case stops
// before making it and waits in awaiting_budget; what it used and has left
// is the same after continue-as-new and after its worker was SIGKILLed;
// raise-budget lets the waiting turn go on.
func TestBudgetStopsBeforeTheCallAndSurvivesContinueAsNewAndSIGKILL(t *testing.T) {
	h := newHarness(t)
	first := startWorkerProcess(t, h)
	fixedUsage(h, 100, 20) // 0.1 + 0.04 units: 1 unit a call
	echo, _ := catalog.Builtin().Get("test/echo")
	perCall := echo.UnitsOf(catalog.Tokens{Input: 100, Output: 20})
	require.Equal(t, int64(1), perCall)

	id := "budget-waits"
	a := agent("spender")
	a["maxTokens"] = 1000 // the worst case of a call: its input bytes at 0.001 and 1,000 tokens at 0.002, 3 units
	// 13 units: ten turns use 10 and leave 3, the eleventh's worst case (3)
	// still fits and leaves 2, the twelfth's does not.
	startTask(t, h, id, map[string]any{"agent": a, "input": text("turn 1"), "continueAsNewEvents": 100,
		"budget": map[string]any{"units": 13}})
	waitOutputs(t, id, 1)
	for n := 2; n <= 12; n++ {
		require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text(fmt.Sprintf("turn %d", n))))
		if n < 12 {
			waitOutputs(t, id, n)
		}
	}
	var st contract.Status
	eventually(t, time.Minute, "the twelfth turn waits for a raise", func() bool {
		st = status(t, id)
		return st.State == contract.StateAwaitingBudget
	})
	require.Equal(t, 11, st.Outputs)
	require.Len(t, h.model.Calls(), 11, "the call that might exceed the budget was not made")
	require.NotNil(t, st.Budget)
	require.Equal(t, 11*perCall, st.Budget.Used.Units)
	require.Equal(t, int64(2), *st.Budget.Left.Units)
	require.NotNil(t, st.Budget.Needed)
	require.Greater(t, st.Budget.Needed.Units, *st.Budget.Left.Units, "it waits because the worst case does not fit")
	require.GreaterOrEqual(t, st.Run, 2, "the task continued as new on the way (continueAsNewEvents 100)")

	// SIGKILL the worker while the task waits, then serve it from another.
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	startWorkerProcess(t, h)
	again := status(t, id)
	require.Equal(t, contract.StateAwaitingBudget, again.State)
	require.Equal(t, st.Budget.Used, again.Budget.Used)
	require.Equal(t, *st.Budget.Left.Units, *again.Budget.Left.Units)

	raised, err := raiseBudget(t, id, 10)
	require.NoError(t, err)
	require.Equal(t, int64(23), *raised.Limit.Units)
	require.Equal(t, 1, raised.Raises)
	done := waitOutputs(t, id, 12)
	require.Equal(t, 12*perCall, done.Budget.Used.Units)
	require.Equal(t, int64(11), *done.Budget.Left.Units)
	require.Len(t, h.model.Calls(), 12)
	require.Equal(t, contract.StateWaiting, done.State)
	recordHistory(t, id, "", "budget-raised-after-wait") // the last run: the wait, the SIGKILL, the raise
}

// With onExhausted "fail" the task fails BUDGET_EXCEEDED before the call
// that might exceed the budget, its records and usage in the details.
func TestBudgetOnExhaustedFailFailsWithRecords(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	fixedUsage(h, 100, 20)
	id := "budget-fails"
	a := agent("spender")
	a["maxTokens"] = 1000
	run := startTask(t, h, id, map[string]any{"agent": a, "input": text("one"), "collected": map[string]any{"customer": "acme"},
		"budget": map[string]any{"units": 4, "onExhausted": "fail"}})
	waitOutputs(t, id, 1)
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("two")))
	waitOutputs(t, id, 2)
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("three")))
	err := run.Get(ctxT(t, time.Minute), nil)
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, contract.ErrBudgetExceeded, ae.Type())
	require.Contains(t, ae.Message(), `onExhausted is "fail"`)
	var d contract.BudgetExceeded
	require.NoError(t, ae.Details(&d))
	require.Equal(t, int64(2), d.Budget.Used.Units)
	require.Equal(t, int64(2), *d.Budget.Left.Units)
	require.Equal(t, 200, d.Usage.InputTokens)
	require.Len(t, d.Records, 1)
	require.Equal(t, "customer", d.Records[0].Name)
	require.JSONEq(t, `"acme"`, string(d.Records[0].Value))
	require.Len(t, h.model.Calls(), 2)
	st := status(t, id)
	require.Equal(t, contract.StateFailed, st.State)
	require.Equal(t, contract.ErrBudgetExceeded, st.Error.Type)
	recordHistory(t, id, "", "budget-exceeded-fail")

	// A rescued task starts with what is left (2 units): too little for
	// the unanswered input, so it fails the same way, making no call.
	ctx := ctxT(t, time.Minute)
	left, err := h.tasks.Rescue(ctx, id, nil, starter.StartOptions{TaskID: id + "-rescued"})
	require.NoError(t, err)
	err = sdk.GetWorkflow(ctx, left, "").Get(ctx, nil)
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, contract.ErrBudgetExceeded, ae.Type())
	require.NoError(t, ae.Details(&d))
	require.Equal(t, int64(2), *d.Budget.Limit.Units, "what the earlier task had left")
	require.Equal(t, contract.OnExhaustedFail, d.Budget.Limit.OnExhausted)
	require.Len(t, h.model.Calls(), 2)
	// Unless the caller gives it a new budget.
	fresh, err := h.tasks.Rescue(ctx, id, nil, starter.StartOptions{TaskID: id + "-refunded",
		Budget: &contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(10)}}})
	require.NoError(t, err)
	st = waitOutputs(t, fresh, 1) // its own: it answers the input the failed task left unanswered
	require.Equal(t, int64(10), *st.Budget.Limit.Units)
	require.Equal(t, int64(1), st.Budget.Used.Units, "the rescued task's own call")
	require.Len(t, h.model.Calls(), 3)
}

// A parent's budget counts what its sub-tasks used: each starts with its
// share (the capability's budget, at most what the parent has left), held
// while it runs; a sub-task whose share is too small fails BUDGET_EXCEEDED
// and the parent's model reads why.
func TestBudgetCountsSubTasksAgainstTheParent(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	child := map[string]any{"name": "helper", "model": "test/child", "instructions": "Help.", "maxTokens": 50}
	parent := map[string]any{"name": "boss", "model": "test/parent", "instructions": "Delegate.", "maxTokens": 50,
		"capabilities": []any{
			map[string]any{"name": "help", "kind": "delegate", "agent": child, "budget": map[string]any{"inputTokens": 5000}},
			map[string]any{"name": "tiny", "kind": "delegate", "agent": child, "budget": map[string]any{"inputTokens": 10}},
		}}
	var tinyResult string
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if c.Model == "child" {
			return testmodel.Reply{Text: "helped", PromptTokens: 100, CompletionTokens: 10}
		}
		var results []string
		for _, m := range c.Messages {
			if m.Role == "tool" {
				results = append(results, m.Content)
			}
		}
		switch len(results) {
		case 0:
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "c1", Name: "help", Arguments: `{"message":"please"}`}}, PromptTokens: 40, CompletionTokens: 5}
		case 1:
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "c2", Name: "tiny", Arguments: `{"message":"please"}`}}, PromptTokens: 45, CompletionTokens: 5}
		default:
			tinyResult = results[1]
			return testmodel.Reply{Text: "done", PromptTokens: 50, CompletionTokens: 5}
		}
	})
	id := "budget-parent"
	startTask(t, h, id, map[string]any{"agent": parent, "input": text("go"),
		"budget": map[string]any{"inputTokens": 100000, "outputTokens": 1000}})
	st := waitOutputs(t, id, 1)
	require.Nil(t, st.Error)
	// The parent's three calls and the helper's one; tiny's share (10
	// input tokens) covered no request, so it made none.
	require.Equal(t, contract.Spend{InputTokens: 40 + 45 + 50 + 100, OutputTokens: 5 + 5 + 5 + 10}, st.Budget.Used)
	require.Equal(t, contract.Spend{}, st.Budget.Reserved, "nothing held once the sub-tasks ended")
	require.Equal(t, int64(100000-235), *st.Budget.Left.InputTokens)
	require.Contains(t, tinyResult, contract.ErrBudgetExceeded, "the model read why the sub-task failed")
	require.Len(t, h.model.Calls(), 4)

	// The helper started with its share, as its own budget.
	helperID := id + ".help.t1.c0" // the first call of round 1 (delegate.go's IDs)
	var res contract.Result
	require.NoError(t, sdk.GetWorkflow(ctxT(t, 10*time.Second), helperID, "").Get(ctxT(t, 10*time.Second), &res))
	require.NotNil(t, res.Budget)
	require.Equal(t, int64(5000), *res.Budget.Limit.InputTokens, "the share, below what the parent had left")
	require.Equal(t, int64(1000-5), *res.Budget.Limit.OutputTokens, "no share of output tokens: what the parent had left (its first call used 5)")
	require.Equal(t, contract.OnExhaustedFail, res.Budget.Limit.OnExhausted)
	require.True(t, strings.HasPrefix(tinyResult, "error") || strings.Contains(tinyResult, "sub-task failed"), "%s", tinyResult)
	recordHistory(t, id, "", "budget-parent")
	recordHistory(t, helperID, "", "budget-parent-help")
	recordHistory(t, id+".tiny.t1.c100", "", "budget-parent-tiny")
}

// A conversation on the OpenAI-compatible test model, whose prompt cache
// reports prompt_tokens_details.cached_tokens: status.usage carries them,
// and the budget's units price them at the catalogue's cached price.
func TestOpenAICachedTokensInUsageAndUnits(t *testing.T) {
	h := newHarness(t)
	h.model.SetPromptCache(true)
	cat, err := catalog.Parse([]byte(`{"models": [{"name": "test/echo", "maxTokens": 4096,
		"inputUnitsPerToken": 0.01, "outputUnitsPerToken": 0.02, "cachedInputUnitsPerToken": 0.001}]}`))
	require.NoError(t, err)
	cfg := h.workerConfig()
	cfg.Catalog = cat
	h.runWorker(cfg)
	id := "openai-cached"
	a := agent("cached")
	a["instructions"] = strings.Repeat("You answer questions about Duka's orders, briefly and exactly. ", 20) // a prefix worth caching
	startTask(t, h, id, map[string]any{"agent": a, "input": text("first question"), "budget": map[string]any{"units": 100000}})
	waitOutputs(t, id, 1)
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("second question")))
	st := waitOutputs(t, id, 2)

	calls := h.model.Calls()
	require.Len(t, calls, 2)
	require.Zero(t, calls[0].CacheReadTokens)
	require.Positive(t, calls[1].CacheReadTokens, "the second request repeats the first's prefix: read from the cache")
	require.Equal(t, calls[1].CacheReadTokens, st.Usage.CacheReadTokens, "usage carries the cached tokens")
	require.Equal(t, calls[1].CacheReadTokens, st.LastTurn.Usage.CacheReadTokens)

	echo, _ := cat.Get("test/echo")
	var want int64
	for i, c := range calls {
		u := st.RecentTurns[i].Usage
		require.Equal(t, c.CacheReadTokens, u.CacheReadTokens)
		want += echo.UnitsOf(catalog.Tokens{Input: int64(u.InputTokens), Output: int64(u.OutputTokens), CacheRead: int64(u.CacheReadTokens)})
	}
	require.Equal(t, want, st.Budget.Used.Units, "units price the cached tokens at the cached price")
	u := st.RecentTurns[1].Usage
	require.Less(t, echo.UnitsOf(catalog.Tokens{Input: int64(u.InputTokens), Output: int64(u.OutputTokens), CacheRead: int64(u.CacheReadTokens)}),
		echo.Units(int64(u.InputTokens), int64(u.OutputTokens)), "cheaper than the same tokens uncached")
}

// A model call whose worker is SIGKILLed while the model writes (the
// provider has billed the request, nobody charged it) counts against the
// budget: the retried attempt, on another worker, starts from the ledger
// the killed one left (the request in flight at its worst case), and the
// turn charges both requests.
func TestBudgetChargesARequestWhoseWorkerDiedMidCall(t *testing.T) {
	h := newHarness(t)
	first := startWorkerProcess(t, h)
	fixedUsage(h, 100, 20)
	id := "budget-killed-mid-call"
	a := agent("spender")
	a["maxTokens"] = 1000 // the in-flight request's worst case: 1,000 output tokens
	h.model.Hold()
	startTask(t, h, id, map[string]any{"agent": a, "input": text("turn 1"),
		"budget": map[string]any{"inputTokens": 100000, "outputTokens": 100000}})
	require.NoError(t, h.model.WaitForCalls(ctxT(t, 30*time.Second), 1))
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	h.model.Release()
	startWorkerProcess(t, h)

	done := waitOutputsWithin(t, id, 1, 2*time.Minute) // the killed attempt's heartbeat times out first
	require.Len(t, h.model.Calls(), 2, "the turn was asked twice: once by the killed worker, once by the retry")
	require.NotNil(t, done.Budget)
	used := done.Budget.Used
	require.Equal(t, int64(1000+20), used.OutputTokens, "the killed request at its worst case, the answered one at what it used")
	require.Greater(t, used.InputTokens, int64(100), "the killed request's input counts too, at its bytes")
	require.Equal(t, int64(100000)-used.InputTokens, *done.Budget.Left.InputTokens)
	require.Equal(t, used.OutputTokens, int64(done.Usage.OutputTokens), "status.usage counts what the budget charged")
}
