package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// budgetModel is a model activity that keeps a budget as the real one
// does: each call's worst case is worst units, each call uses used units.
type budgetModel struct {
	worst, used int64
	calls       []activities.ModelTurnInput
	sent        int // calls whose request fitted
}

func newBudgetEnv(t *testing.T, m *budgetModel) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	wf := &Workflows{}
	env.RegisterWorkflowWithOptions(wf.AgentTask, workflow.RegisterOptions{Name: contract.WorkflowType})
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.ModelTurnInput) (*activities.ModelTurnResult, error) {
		return nil, errors.New("replaced by OnActivity")
	}, activity.RegisterOptions{Name: activities.ModelTurnName})
	contexts := callContexts{}
	env.OnActivity(activities.ModelTurnName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.ModelTurnInput) (*activities.ModelTurnResult, error) {
			in = contexts.whole(t, in)
			m.calls = append(m.calls, in)
			if in.Budget != nil && in.Budget.Left.Units != nil && *in.Budget.Left.Units < m.worst {
				return &activities.ModelTurnResult{BudgetShort: &contract.Spend{Units: m.worst, InputTokens: 5, OutputTokens: 5}, Offered: []string{}}, nil
			}
			m.sent++
			return &activities.ModelTurnResult{
				Output:     contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("ok")}},
				StopReason: "end", Model: "echo", Calls: 1, Offered: []string{},
				Usage: activities.Usage{Usage: contract.Usage{InputTokens: 3, OutputTokens: 2}, Units: m.used},
			}, nil
		})
	return env
}

type raiseCallbacks struct {
	err    error
	result contract.BudgetStatus
	done   bool
}

func (u *raiseCallbacks) Accept()          {}
func (u *raiseCallbacks) Reject(err error) { u.err, u.done = err, true }
func (u *raiseCallbacks) Complete(success any, err error) {
	u.done, u.err = true, err
	if r, ok := success.(contract.BudgetStatus); ok {
		u.result = r
	}
}

func budgetArgs(units int64, onExhausted string) StartArgs {
	return StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("one"),
		Budget: &contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(units)}, OnExhausted: onExhausted}}}
}

// Turns run while their worst case fits; the one that does not waits in
// awaiting_budget, and goes on once raise-budget makes room.
func TestBudgetWaitsForARaiseThenGoesOn(t *testing.T) {
	m := &budgetModel{worst: 10, used: 6}
	env := newBudgetEnv(t, m)
	var waiting, after contract.Status
	raise := &raiseCallbacks{}
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput("two")) }, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput("three")) }, 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		waiting = queryStatus(t, env)
		env.UpdateWorkflow(contract.UpdateRaiseBudget, "r1", raise, contract.RaiseBudgetArgs{Amounts: contract.Amounts{Units: contract.Amount(10)}, By: "ops"})
	}, 3*time.Minute)
	env.RegisterDelayedCallback(func() {
		after = queryStatus(t, env)
		env.SignalWorkflow(contract.SignalClose, nil)
	}, 4*time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, budgetArgs(20, ""))
	require.NoError(t, env.GetWorkflowError())

	// Turns 1 and 2 used 12 of 20; turn 3's worst case (10) did not fit the 8 left.
	require.Equal(t, contract.StateAwaitingBudget, waiting.State)
	require.NotNil(t, waiting.Budget)
	require.Equal(t, int64(12), waiting.Budget.Used.Units)
	require.Equal(t, int64(8), *waiting.Budget.Left.Units)
	require.Equal(t, int64(10), waiting.Budget.Needed.Units)
	require.Equal(t, 2, waiting.Outputs)

	require.True(t, raise.done)
	require.NoError(t, raise.err)
	require.Equal(t, int64(30), *raise.result.Limit.Units)
	require.Equal(t, 3, after.Outputs, "the waiting turn answered after the raise")
	require.Equal(t, int64(18), after.Budget.Used.Units)
	require.Equal(t, int64(12), *after.Budget.Left.Units)
	require.Nil(t, after.Budget.Needed)
	require.Equal(t, 1, after.Budget.Raises)
	require.Equal(t, 3, m.sent)
	require.Len(t, m.calls, 4, "the refused call was made again once")
	require.Equal(t, int64(8), *m.calls[2].Budget.Left.Units)
	require.Equal(t, int64(18), *m.calls[3].Budget.Left.Units)
}

// With onExhausted "fail" the task fails BUDGET_EXCEEDED, what it used in
// the details.
func TestBudgetOnExhaustedFailEndsTheTask(t *testing.T) {
	m := &budgetModel{worst: 10, used: 6}
	env := newBudgetEnv(t, m)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput("two")) }, time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, budgetArgs(15, contract.OnExhaustedFail))
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.Equal(t, contract.ErrBudgetExceeded, appErrorType(t, err))
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae))
	var d contract.BudgetExceeded
	require.NoError(t, ae.Details(&d))
	require.Equal(t, int64(6), d.Budget.Used.Units)
	require.Equal(t, int64(9), *d.Budget.Left.Units)
	require.Equal(t, 3, d.Usage.InputTokens)
	require.Equal(t, 1, m.sent)
}

// A wait for a raise is bounded by the idle timeout.
func TestBudgetWaitEndsAfterTheIdleTimeout(t *testing.T) {
	m := &budgetModel{worst: 10, used: 6}
	env := newBudgetEnv(t, m)
	args := budgetArgs(5, "")
	args.IdleTimeout = "10m"
	env.ExecuteWorkflow(contract.WorkflowType, args)
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.Equal(t, contract.ErrBudgetExceeded, appErrorType(t, err))
	require.ErrorContains(t, err, "no raise-budget came within the idle timeout (10m0s)")
	require.Zero(t, m.sent)
}

// raise-budget is refused, with the reason, on a task without a budget and
// for a dimension the budget does not limit.
func TestRaiseBudgetRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		args  StartArgs
		raise contract.RaiseBudgetArgs
		want  string
	}{
		"no budget": {StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("one")}},
			contract.RaiseBudgetArgs{Amounts: contract.Amounts{Units: contract.Amount(5)}}, "this task has no budget"},
		"other dimension": {budgetArgs(50, ""), contract.RaiseBudgetArgs{Amounts: contract.Amounts{InputTokens: contract.Amount(5)}},
			"does not limit inputTokens"},
		"not positive": {budgetArgs(50, ""), contract.RaiseBudgetArgs{Amounts: contract.Amounts{Units: contract.Amount(0)}}, "must be between 1"},
	} {
		t.Run(name, func(t *testing.T) {
			env := newBudgetEnv(t, &budgetModel{worst: 1, used: 1})
			cb := &raiseCallbacks{}
			env.RegisterDelayedCallback(func() {
				env.UpdateWorkflow(contract.UpdateRaiseBudget, "r", cb, tc.raise)
			}, time.Minute)
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalClose, nil) }, 2*time.Minute)
			env.ExecuteWorkflow(contract.WorkflowType, tc.args)
			require.NoError(t, env.GetWorkflowError())
			require.True(t, cb.done)
			require.ErrorContains(t, cb.err, tc.want)
		})
	}
}

// A bad budget is refused at start.
func TestBadBudgetRefusedAtStart(t *testing.T) {
	for _, b := range []contract.Budget{
		{},
		{Amounts: contract.Amounts{Units: contract.Amount(-1)}},
		{Amounts: contract.Amounts{Units: contract.Amount(5)}, OnExhausted: "explode"},
	} {
		args := StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Budget: &b}}
		_, err := CheckStart(&args)
		require.Error(t, err)
		require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err))
		_, err = checkStart(&args, rulesFor(rulesMCP))
		require.ErrorContains(t, err, "budget")
	}
	ok := StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Budget: &contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(5)}}}}
	_, err := checkStart(&ok, rulesFor(rulesMCP))
	require.ErrorContains(t, err, "budget needs a newer worker", "older rules never took a budget")
}
