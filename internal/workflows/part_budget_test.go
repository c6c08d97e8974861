package workflows

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// unitsBudget is a record with a budget of units (and no other limit).
func unitsBudget(units int64) *budgetRecord {
	var r budgetRecord
	r.startBudget(true, &contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(units)}})
	return &r
}

// A budget is the task's only when the start argument gives one under
// rules.spendBudget; without one, model calls are handed no check and
// status shows none.
func TestATaskHasABudgetOnlyWhenStartedWithOneUnderTheRules(t *testing.T) {
	b := &contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(10)}}
	var off, none budgetRecord
	off.startBudget(false, b)
	none.startBudget(true, nil)
	for _, r := range []*budgetRecord{&off, &none} {
		require.False(t, r.hasBudget())
		require.Nil(t, r.budgetCheck())
		require.Nil(t, r.budgetStatus(budgetWait{}))
		r.chargeBudget(activities.Usage{Units: 5}) // nothing to charge
		require.False(t, r.hasBudget())
	}

	on := unitsBudget(10)
	require.True(t, on.hasBudget())
	left := on.budgetCheck().Left
	require.Equal(t, int64(10), *left.Units)
	require.Nil(t, left.InputTokens, "a dimension without a limit stays unlimited")
}

// What calls use is charged against the budget; what is left never goes
// below zero, though a call may overdraw what was used.
func TestCallsAreChargedAgainstTheBudget(t *testing.T) {
	var r budgetRecord
	r.startBudget(true, &contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(10), OutputTokens: contract.Amount(100)}})
	r.chargeBudget(activities.Usage{Usage: contract.Usage{InputTokens: 30, OutputTokens: 40}, Units: 4})
	left := r.budgetCheck().Left
	require.Equal(t, int64(6), *left.Units)
	require.Equal(t, int64(60), *left.OutputTokens)
	require.Nil(t, left.InputTokens)

	r.chargeBudget(activities.Usage{Units: 9})
	st := r.budgetStatus(budgetWait{})
	require.Equal(t, int64(13), st.Used.Units, "used keeps the overdraft")
	require.Equal(t, int64(30), st.Used.InputTokens)
	require.Equal(t, int64(0), *st.Left.Units, "nothing is left, not less")
}

// status shows the call waiting for a raise by its need, a copy of it.
func TestBudgetStatusShowsWhatTheWaitingCallNeeds(t *testing.T) {
	r := unitsBudget(10)
	require.Nil(t, r.budgetStatus(budgetWait{}).Needed)
	need := contract.Spend{Units: 12}
	st := r.budgetStatus(budgetWait{needed: &need})
	require.Equal(t, int64(12), st.Needed.Units)
	need.Units = 99
	require.Equal(t, int64(12), st.Needed.Units)
	require.Equal(t, int64(10), *st.Limit.Units)
	require.Equal(t, 0, st.Raises)
}

// A raise is checked against the budget: a task without one, an argument
// that is not the raise's shape, and a dimension the budget does not limit
// are refused INVALID_INPUT; a good one adds to the limit and is counted.
func TestARaiseIsCheckedThenAddedToTheLimit(t *testing.T) {
	var none budgetRecord
	_, err := none.checkRaise(jsonArgument(t, contract.RaiseBudgetArgs{Amounts: contract.Amounts{Units: contract.Amount(5)}}))
	require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err))
	require.Contains(t, err.Error(), "no budget")

	r := unitsBudget(10)
	r.chargeBudget(activities.Usage{Units: 8})
	_, err = r.checkRaise(jsonArgument(t, "five"))
	require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err))
	_, err = r.checkRaise(jsonArgument(t, contract.RaiseBudgetArgs{Amounts: contract.Amounts{InputTokens: contract.Amount(5)}}))
	require.ErrorContains(t, err, "does not limit inputTokens")

	a, err := r.checkRaise(jsonArgument(t, contract.RaiseBudgetArgs{Amounts: contract.Amounts{Units: contract.Amount(5)}, By: "amina"}))
	require.NoError(t, err)
	require.Equal(t, "amina", a.By)
	left := r.raise(a)
	require.Equal(t, int64(7), *left.Units)
	st := r.budgetStatus(budgetWait{})
	require.Equal(t, int64(15), *st.Limit.Units)
	require.Equal(t, 1, st.Raises)
	r.raise(a)
	require.Equal(t, 2, r.budgetStatus(budgetWait{}).Raises)
}

// A sub-task's budget is its capability's share, at most what is left (all
// that is left without a share), held while it runs; it always fails when
// exhausted. Without the rules, or without any budget, it has none.
func TestASubTaskIsHeldItsShareOfWhatIsLeft(t *testing.T) {
	share := contract.Capability{Name: "helper", Budget: &contract.Amounts{Units: contract.Amount(4)}}
	plain := contract.Capability{Name: "helper"}

	var none budgetRecord
	require.Nil(t, none.subTaskBudget(true, plain, "c0"))
	require.Nil(t, unitsBudget(10).subTaskBudget(false, share, "c0"))
	alone := none.subTaskBudget(true, share, "c0")
	require.Equal(t, int64(4), *alone.Units, "the share alone bounds it")
	require.Equal(t, contract.OnExhaustedFail, alone.OnExhausted)
	require.False(t, none.hasBudget(), "nothing is held without a budget")

	r := unitsBudget(10)
	b := r.subTaskBudget(true, share, "c1")
	require.Equal(t, int64(4), *b.Units)
	require.Equal(t, contract.OnExhaustedFail, b.OnExhausted)
	st := r.budgetStatus(budgetWait{})
	require.Equal(t, int64(4), st.Reserved.Units)
	require.Equal(t, int64(6), *st.Left.Units)

	rest := r.subTaskBudget(true, plain, "c2")
	require.Equal(t, int64(6), *rest.Units, "no share: all that is left")
	require.Equal(t, int64(0), *r.budgetCheck().Left.Units)
	last := r.subTaskBudget(true, share, "c3")
	require.Equal(t, int64(0), *last.Units, "at most what is left")
}

// Ending a sub-task releases its share and charges what it used: its
// result's budget, its BUDGET_EXCEEDED failure's, else the whole share.
func TestEndingASubTaskReleasesItsShareAndChargesWhatItUsed(t *testing.T) {
	share := contract.Capability{Name: "helper", Budget: &contract.Amounts{Units: contract.Amount(4)}}
	r := unitsBudget(20)
	for _, id := range []string{"done", "over", "canceled"} {
		r.subTaskBudget(true, share, id)
	}
	require.Equal(t, int64(12), r.budgetStatus(budgetWait{}).Reserved.Units)

	r.endSubTaskBudget("done", &contract.Result{Budget: &contract.BudgetStatus{Used: contract.Spend{Units: 1}}}, nil)
	st := r.budgetStatus(budgetWait{})
	require.Equal(t, int64(8), st.Reserved.Units)
	require.Equal(t, int64(1), st.Used.Units)

	over := budgetExceeded("out of budget", &contract.BudgetExceeded{Budget: contract.BudgetStatus{
		Limit: contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(4)}}, Used: contract.Spend{Units: 3}}})
	r.endSubTaskBudget("over", nil, over)
	st = r.budgetStatus(budgetWait{})
	require.Equal(t, int64(4), st.Reserved.Units)
	require.Equal(t, int64(4), st.Used.Units)

	r.endSubTaskBudget("canceled", nil, temporal.NewCanceledError())
	st = r.budgetStatus(budgetWait{})
	require.Equal(t, int64(0), st.Reserved.Units)
	require.Equal(t, int64(8), st.Used.Units, "it left no budget: the whole share")
	require.Equal(t, int64(12), *st.Left.Units)

	r.endSubTaskBudget("unknown", nil, errors.New("never started"))
	require.Equal(t, int64(8), r.budgetStatus(budgetWait{}).Used.Units, "no share held: nothing charged")
	var none budgetRecord
	none.endSubTaskBudget("done", nil, nil) // no budget: nothing to release
	require.False(t, none.hasBudget())
}

// A failed call's spending, in its failure's details, is charged to the
// budget and the usage under rules.chargeFailures only.
func TestAFailedCallsSpendingIsCharged(t *testing.T) {
	spent := activities.SpentOnFailure{Spent: &activities.Usage{Usage: contract.Usage{InputTokens: 7, OutputTokens: 2}, Units: 3}}
	failure := temporal.NewNonRetryableApplicationError("the model failed", contract.ErrModel, nil, spent)
	newState := func() *Carry {
		c := newCarry(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		c.startBudget(true, &contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(10)}})
		return c
	}

	off := newState()
	chargeFailed(off, false, failure)
	require.Equal(t, int64(0), off.budgetStatus(budgetWait{}).Used.Units)
	require.Equal(t, contract.Usage{}, off.used())

	c := newState()
	chargeFailed(c, true, failure)
	require.Equal(t, int64(3), c.budgetStatus(budgetWait{}).Used.Units)
	require.Equal(t, int64(7), c.budgetStatus(budgetWait{}).Used.InputTokens)
	require.Equal(t, 7, c.used().InputTokens)

	chargeFailed(c, true, errors.New("no details"))
	chargeFailed(c, true, temporal.NewApplicationError("no details", contract.ErrModel))
	require.Equal(t, int64(3), c.budgetStatus(budgetWait{}).Used.Units)
}

// BUDGET_EXCEEDED is recognised by its type, and a task without a budget
// has no budget details.
func TestBudgetExceededIsKnownByItsType(t *testing.T) {
	err := budgetExceeded("over", &contract.BudgetExceeded{})
	require.True(t, isBudgetExceeded(err))
	require.Contains(t, err.Error(), "the details hold its records")
	require.False(t, isBudgetExceeded(temporal.NewApplicationError("x", contract.ErrModel)))
	require.False(t, isBudgetExceeded(errors.New(contract.ErrBudgetExceeded)))

	require.Nil(t, budgetDetails(nil, &StartArgs{}, budgetWait{}))
	require.Nil(t, budgetDetails(newCarry(time.Now()), &StartArgs{}, budgetWait{}))
}
