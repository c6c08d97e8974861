package integration

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/starter"
)

// Budgets over the Tasks API and the starter CLI (docs/budgets.md, the
// caller's side). test/echo costs 0.001 units an input token and 0.002 an
// output token: with maxTokens 1000 the worst case of any call is over 2
// units, so a budget of 1 unit stops a run before its first call.

// runState reads a run's status over the API.
func runState(t *testing.T, api *apiServer, id string) map[string]any {
	t.Helper()
	r := api.call("GET", "/v1/runs/"+id, viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	return r.data()
}

// A task's budget is every run's: a run that cannot afford its call waits
// in awaiting_budget (GET /v1/runs/{id} shows it and the budget), POST
// /v1/runs/{id}/budget raises it and the run answers; a run's own budget
// with onExhausted "fail" fails budget_exceeded, and a raise of it, ended,
// is run_closed; a run without a budget cannot be raised.
func TestBudgetAPIRunWaitsForARaiseOrFails(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h, withRunTimeout(8*time.Second))
	task := seedTask()
	task["maxTokens"] = 1000
	task["budget"] = map[string]any{"units": 1}
	createSeedTask(t, api, task)
	r := api.call("GET", "/v1/tasks/support-reply", viewKey, nil)
	require.Equal(t, map[string]any{"units": float64(1)}, r.data()["budget"], "the task shows its budget")
	requireProblem(t, api.call("POST", "/v1/tasks", devKey, withField(withField(task, "name", "bad-budget"), "budget", map[string]any{"units": -5})),
		400, tasksapi.CodeValidationFailed, "budget.units")

	run := map[string]any{"input": "My order is late.", "variables": map[string]any{"customer": "Amina"}}
	r = api.call("POST", "/v1/tasks/support-reply/run", callKey, run)
	requireProblem(t, r, 504, tasksapi.CodeRunTimeout, "")
	id := r.Header.Get("X-Request-Id")
	require.Contains(t, r.JSON["detail"], "awaiting_budget", "the timeout says why the run waits")
	require.Contains(t, r.JSON["detail"], "POST /v1/runs/"+id+"/budget")
	st := runState(t, api, id)
	require.Equal(t, string(contract.StateAwaitingBudget), st["state"])
	b := st["budget"].(map[string]any)
	require.Equal(t, float64(1), b["left"].(map[string]any)["units"])
	require.Greater(t, b["needed"].(map[string]any)["units"].(float64), float64(1), "the call's worst case does not fit")
	require.Zero(t, h.model.CallCount(), "the call that did not fit was not made")

	// Refusals: the permission, bad amounts, a dimension not limited, no run.
	requireProblem(t, api.call("POST", "/v1/runs/"+id+"/budget", viewKey, map[string]any{"units": 100}), 403, tasksapi.CodeForbidden, "")
	requireProblem(t, api.call("POST", "/v1/runs/"+id+"/budget", callKey, map[string]any{"units": 0}), 400, tasksapi.CodeValidationFailed, "units")
	requireProblem(t, api.call("POST", "/v1/runs/"+id+"/budget", callKey, map[string]any{}), 400, tasksapi.CodeValidationFailed, "")
	requireProblem(t, api.call("POST", "/v1/runs/"+id+"/budget", callKey, map[string]any{"units": 5, "by": "me"}), 400, tasksapi.CodeValidationFailed, "by")
	r = api.call("POST", "/v1/runs/"+id+"/budget", callKey, map[string]any{"inputTokens": 100})
	requireProblem(t, r, 400, tasksapi.CodeValidationFailed, "inputTokens")
	require.Contains(t, r.JSON["detail"], "does not limit inputTokens")
	requireProblem(t, api.call("POST", "/v1/runs/run-aaaaaaaaaaaaaaaaaaaaaaaaaa/budget", callKey, map[string]any{"units": 5}), 404, tasksapi.CodeRunNotFound, "")

	r = api.call("POST", "/v1/runs/"+id+"/budget", callKey, map[string]any{"units": 100})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	raised := r.data()
	require.Equal(t, float64(101), raised["limit"].(map[string]any)["units"])
	require.Equal(t, float64(1), raised["raises"])
	waitOutputs(t, id, 1)
	st = runState(t, api, id)
	require.Equal(t, string(contract.StateWaiting), st["state"])
	b = st["budget"].(map[string]any)
	require.Nil(t, b["needed"])
	used := b["used"].(map[string]any)["units"].(float64)
	require.Positive(t, used)
	require.Equal(t, 101-used, b["left"].(map[string]any)["units"])

	// The run's own budget in place of the task's: fail at once.
	own := withField(run, "budget", map[string]any{"units": 1, "onExhausted": "fail"})
	r = api.call("POST", "/v1/tasks/support-reply/run", callKey, own)
	requireProblem(t, r, http.StatusPaymentRequired, tasksapi.CodeBudgetExceeded, "")
	failed := r.Header.Get("X-Request-Id")
	require.Contains(t, r.JSON["detail"], `onExhausted is "fail"`)
	eventually(t, time.Minute, "the run fails", func() bool { return runState(t, api, failed)["state"] == string(contract.StateFailed) })
	st = runState(t, api, failed)
	require.Equal(t, contract.ErrBudgetExceeded, st["error"].(map[string]any)["type"])
	require.Equal(t, "fail", st["budget"].(map[string]any)["limit"].(map[string]any)["onExhausted"])
	requireProblem(t, api.call("POST", "/v1/runs/"+failed+"/budget", callKey, map[string]any{"units": 5}), 409, tasksapi.CodeRunClosed, "")
	requireProblem(t, api.call("POST", "/v1/tasks/support-reply/run", callKey, withField(run, "budget", map[string]any{"onExhausted": "fail"})),
		400, tasksapi.CodeValidationFailed, "budget")

	// A task without a budget: its runs have none, and cannot be raised.
	free := withField(withField(seedTask(), "name", "free"), "budget", deleteField)
	require.Equal(t, http.StatusCreated, api.call("POST", "/v1/tasks", devKey, free).Status)
	api = newAPI(t, h) // the default run timeout: this run must answer
	r = api.call("POST", "/v1/tasks/free/run", callKey, run)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	plain := r.Header.Get("X-Request-Id")
	require.Nil(t, runState(t, api, plain)["budget"])
	r = api.call("POST", "/v1/runs/"+plain+"/budget", callKey, map[string]any{"units": 5})
	requireProblem(t, r, 400, tasksapi.CodeValidationFailed, "")
	require.Contains(t, r.JSON["detail"], "has no budget")
}

// The starter CLI starts a task with a budget, raise-budget lets a waiting
// task go on, and a task with --on-exhausted fail ends BUDGET_EXCEEDED,
// result printing its details; rescue hands over what is left unless given
// a new budget (--budget-units).
func TestBudgetCLIRaiseAndFail(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	spender := `{"name":"cli","model":"test/echo","maxTokens":1000}`
	waits, fails := h.queue+"-waits", h.queue+"-fails"
	out, stderr, code := cli(t, h, "start", "--agent", spender, "--input", "hello", "--task-id", waits, "--budget-units", "1")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, `{"task_id":"`+waits+`"}`, out)
	eventually(t, time.Minute, "the task waits for a raise", func() bool { return status(t, waits).State == contract.StateAwaitingBudget })

	out, stderr, code = cli(t, h, "status", waits)
	require.Equal(t, 0, code, stderr)
	var st contract.Status
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.NotNil(t, st.Budget)
	require.NotNil(t, st.Budget.Needed)
	require.Equal(t, int64(1), *st.Budget.Left.Units)

	_, stderr, code = cli(t, h, "raise-budget", waits, "--output-tokens", "5")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, `"INVALID_INPUT"`)
	require.Contains(t, stderr, "does not limit outputTokens")

	out, stderr, code = cli(t, h, "raise-budget", waits, "--units", "100", "--by", "ops")
	require.Equal(t, 0, code, stderr)
	var raised contract.BudgetStatus
	require.NoError(t, json.Unmarshal([]byte(out), &raised))
	require.Equal(t, int64(101), *raised.Limit.Units)
	require.Equal(t, 1, raised.Raises)
	waitOutputs(t, waits, 1)
	require.Equal(t, 1, h.model.CallCount())
	require.Positive(t, status(t, waits).Budget.Used.Units)

	_, stderr, code = cli(t, h, "start", "--agent", spender, "--input", "hello", "--task-id", fails, "--budget-units", "1", "--on-exhausted", "fail")
	require.Equal(t, 0, code, stderr)
	_, stderr, code = cli(t, h, "result", fails)
	require.Equal(t, 1, code)
	var e struct {
		Error struct {
			Type    string                  `json:"type"`
			Details contract.BudgetExceeded `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(stderr), &e), stderr)
	require.Equal(t, starter.ErrBudgetExceeded, e.Error.Type)
	require.Equal(t, int64(1), *e.Error.Details.Budget.Limit.Units)
	require.Equal(t, contract.OnExhaustedFail, e.Error.Details.Budget.Limit.OnExhausted)
	require.Equal(t, 1, h.model.CallCount(), "the failed task made no call")

	// A rescue hands over what is left (1 unit, onExhausted fail): it fails
	// the same; a rescue given a new budget goes on.
	same, fresh := h.queue+"-same", h.queue+"-fresh"
	_, stderr, code = cli(t, h, "rescue", fails, "--task-id", same)
	require.Equal(t, 0, code, stderr)
	_, stderr, code = cli(t, h, "result", same)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, `"BUDGET_EXCEEDED"`)
	require.Equal(t, int64(1), *status(t, same).Budget.Limit.Units, "what was left, not the budget again")
	_, stderr, code = cli(t, h, "rescue", fails, "--task-id", fresh, "--budget-units", "100")
	require.Equal(t, 0, code, stderr)
	waitOutputs(t, fresh, 1)
	st = status(t, fresh)
	require.Equal(t, int64(100), *st.Budget.Limit.Units)
	require.Empty(t, st.Budget.Limit.OnExhausted, "the new budget as given")
	require.Equal(t, 2, h.model.CallCount())
}
