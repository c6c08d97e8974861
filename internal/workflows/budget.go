package workflows

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// A task's budget (rules.spendBudget; contract/budget.go). What was used and
// what is held for running sub-tasks are workflow state (Carry.Budget), so
// the budget left survives continue-as-new, a worker's crash and replay.
// Every model call is handed what is left; the activity reserves each
// request's worst case against it and sends none that does not fit
// (activities/budget.go). The task then waits in awaiting_budget for
// raise-budget (bounded by the idle timeout), or with onExhausted "fail"
// ends with BUDGET_EXCEEDED, its records in the details.

// budgetState is Carry.Budget.
type budgetState struct {
	Limit contract.Budget `json:"limit"`
	Used  contract.Spend  `json:"used"`
	// Held are the shares of the sub-tasks running now, by workflow ID.
	Held   []heldShare `json:"held,omitempty"`
	Raises int         `json:"raises,omitempty"`
}

type heldShare struct {
	ID    string         `json:"id"`
	Share contract.Spend `json:"share"`
	// Spent is what the sub-task of a tree reported it spent so far
	// (rules.nestedSubTasks; tree.go): counted as used at once, the rest of
	// the share still held.
	Spent *contract.Spend `json:"spent,omitempty"`
}

// spentBySubTask notes what the running sub-task childID spent so far.
func (r *budgetRecord) spentBySubTask(childID string, spent contract.Spend) {
	if r.Budget == nil {
		return
	}
	for i := range r.Budget.Held {
		if h := &r.Budget.Held[i]; h.ID == childID {
			h.Spent = &spent
		}
	}
}

// subTasksSpent sums what the running sub-tasks reported spent.
func (b *budgetState) subTasksSpent() contract.Spend {
	var s contract.Spend
	for _, h := range b.Held {
		if h.Spent != nil {
			s = s.Plus(*h.Spent)
		}
	}
	return s
}

// budgetWait is the call waiting for a raise (not carried: a run continues
// as new only between turns).
type budgetWait struct {
	needed *contract.Spend
}

// waiting says a call waits for a raise.
func (w budgetWait) waiting() bool { return w.needed != nil }

// checkBudgetArgs refuses StartArgs budget on older rules, and a bad one.
func checkBudgetArgs(args *StartArgs, rules rules) error {
	if args.Budget == nil {
		return nil
	}
	if !rules.spendBudget {
		return contract.Invalid("budget needs a newer worker")
	}
	return contract.CheckBudget("budget", *args.Budget)
}

// startBudget makes the start argument's budget the task's (on:
// rules.spendBudget).
func (r *budgetRecord) startBudget(on bool, budget *contract.Budget) {
	if on && budget != nil {
		r.Budget = &budgetState{Limit: *budget}
	}
}

// hasBudget says whether the task has a budget.
func (r *budgetRecord) hasBudget() bool { return r.Budget != nil }

// held sums the shares held for running sub-tasks.
func (b *budgetState) held() contract.Spend {
	var s contract.Spend
	for _, h := range b.Held {
		s = s.Plus(h.Share)
	}
	return s
}

// left is what the task may still spend, in each limited dimension.
func (b *budgetState) left() contract.Amounts {
	spent := b.Used.Plus(b.held())
	less := func(limit *int64, n int64) *int64 {
		if limit == nil {
			return nil
		}
		return contract.Amount(max(0, *limit-n))
	}
	return contract.Amounts{Units: less(b.Limit.Units, spent.Units), InputTokens: less(b.Limit.InputTokens, spent.InputTokens),
		OutputTokens: less(b.Limit.OutputTokens, spent.OutputTokens)}
}

// budgetCheck is what a model call is handed: nil without a budget.
func (r *budgetRecord) budgetCheck() *activities.BudgetCheck {
	if r.Budget == nil {
		return nil
	}
	return &activities.BudgetCheck{Left: r.Budget.left()}
}

// chargeBudget counts what a call used.
func (r *budgetRecord) chargeBudget(u activities.Usage) {
	if b := r.Budget; b != nil {
		b.Used = b.Used.Plus(contract.Spend{Units: u.Units, InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens)})
	}
}

// chargeFailed charges what a model call or shaping attempt that failed
// for good spent: the provider billed its requests (the failure's
// activities.SpentOnFailure detail; rules.chargeFailures). The task's
// usage counts them too, so a failed sub-task's details carry them to its
// parent. on: rules.chargeFailures.
func chargeFailed(c *Carry, on bool, err error) {
	if !on {
		return
	}
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || !ae.HasDetails() {
		return
	}
	var d activities.SpentOnFailure
	if ae.Details(&d) != nil || d.Spent == nil {
		return
	}
	c.chargeBudget(*d.Spent)
	c.addUsage(d.Spent.Usage)
}

// budgetStatus is status.budget: nil without a budget. w is the call
// waiting for a raise, if one does.
func (r *budgetRecord) budgetStatus(w budgetWait) *contract.BudgetStatus {
	b := r.Budget
	if b == nil {
		return nil
	}
	spent := b.subTasksSpent() // used already, of the shares still held
	st := &contract.BudgetStatus{Limit: b.Limit, Used: b.Used.Plus(spent), Reserved: b.held().Minus(spent), Left: b.left(), Raises: b.Raises}
	if w.needed != nil {
		need := *w.needed
		st.Needed = &need
	}
	return st
}

// errBudgetClosed ends a wait for a raise when the task is closed: the turn
// ends as a canceled one does (its inputs stay committed).
var errBudgetClosed = errors.New("the task was closed while its next model call waited for a budget raise")

// awaitBudget is what a call does when the budget refused its request
// (need is the request's worst case): with onExhausted "fail" the task
// fails; otherwise it waits in awaiting_budget until a raise makes room,
// the turn is canceled (waitCtx) or, for a turn, the task is closed. No
// raise within the idle timeout fails the task.
func (t *task) awaitBudget(ctx, waitCtx workflow.Context, need contract.Spend, turn bool) error {
	b := t.durable.Budget
	if b.Limit.OnExhausted == contract.OnExhaustedFail {
		return budgetExceeded(fmt.Sprintf("the next model call may cost %s, more than the %s left of the task's budget (onExhausted is \"fail\")", spendText(need), amountsText(b.left())), budgetDetails(t.durable, &t.args, t.budget))
	}
	prev := t.life.enter(contract.StateAwaitingBudget)
	t.budget.needed = &need
	t.showDetails(ctx)
	t.logger.Info("awaiting a budget raise", "needed", spendText(need), "left", amountsText(b.left()))
	ok, err := workflow.AwaitWithOptions(waitCtx, workflow.AwaitOptions{Timeout: t.life.idleTimeout(),
		TimerOptions: workflow.TimerOptions{Summary: "budget raise wait " + shortDuration(t.life.idleTimeout())}}, func() bool {
		return b.left().Fits(need) || (turn && t.durable.closing())
	})
	t.life.enter(prev)
	t.budget.needed = nil
	t.showDetails(ctx)
	switch {
	case err != nil:
		return err // the turn was canceled
	case !ok:
		return budgetExceeded(fmt.Sprintf("the next model call may cost %s, more than the %s left of the task's budget, and no raise-budget came within the idle timeout (%s)", spendText(need), amountsText(b.left()), t.life.idleTimeout()), budgetDetails(t.durable, &t.args, t.budget))
	case !b.left().Fits(need):
		return errBudgetClosed
	}
	return nil
}

// budgetExceeded is the task's failure: BUDGET_EXCEEDED, with what it
// collected and used in the details (budgetDetails).
func budgetExceeded(msg string, details *contract.BudgetExceeded) error {
	return temporal.NewNonRetryableApplicationError(msg+"; the details hold its records, usage and budget", contract.ErrBudgetExceeded, nil, *details)
}

// registerBudget installs the raise-budget update. Its validator writes
// nothing; the handler checks again, so replay decides the same.
func (t *task) registerBudget(ctx workflow.Context) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateRaiseBudget, t.raiseBudget, workflow.UpdateHandlerOptions{
		Validator: func(ctx workflow.Context, raw converter.RawValue) error {
			if t.opening.restoring() {
				return nil // checked by the handler once the state is read
			}
			_, err := t.durable.checkRaise(raw)
			if err != nil {
				return appError(err)
			}
			return nil
		},
	})
}

// checkRaise decodes and checks a raise against the task's budget.
func (r *budgetRecord) checkRaise(raw converter.RawValue) (contract.RaiseBudgetArgs, error) {
	var a contract.RaiseBudgetArgs
	if r.Budget == nil {
		return a, contract.Invalid("raise-budget: this task has no budget; start it with StartArgs budget, such as {\"units\": 5000}, to bound what it spends")
	}
	data, err := payloadJSON(raw)
	if err == nil {
		err = json.Unmarshal(data, &a)
	}
	if err != nil {
		return a, contract.Invalid("raise-budget: the argument must be {\"units\"?: N, \"inputTokens\"?: N, \"outputTokens\"?: N, \"by\"?: \"...\"}: %v", err)
	}
	return a, contract.CheckRaise(r.Budget.Limit, a)
}

// raiseBudget adds the raise to the budget's limits and replies with the budget.
func (t *task) raiseBudget(ctx workflow.Context, raw converter.RawValue) (contract.BudgetStatus, error) {
	if t.opening.restoring() {
		if err := workflow.Await(ctx, func() bool { return !t.opening.restoring() }); err != nil {
			return contract.BudgetStatus{}, err
		}
	}
	r, err := t.durable.checkRaise(raw)
	if err != nil {
		return contract.BudgetStatus{}, appError(err)
	}
	left := t.durable.raise(r)
	t.logger.Info("budget raised", "by", r.By, "left", amountsText(left))
	t.showDetails(ctx)
	t.announceRaise(ctx, r, left) // events.go
	return *t.durable.budgetStatus(t.budget), nil
}

// raise adds a checked raise to the budget's limits and says what is left.
// checkRaise refuses a raise of a dimension the budget does not limit; one
// that reaches here anyway leaves that dimension unlimited.
func (r *budgetRecord) raise(a contract.RaiseBudgetArgs) contract.Amounts {
	add := func(limit **int64, n *int64) {
		if n != nil && *limit != nil {
			*limit = contract.Amount(**limit + *n)
		}
	}
	add(&r.Budget.Limit.Units, a.Units)
	add(&r.Budget.Limit.InputTokens, a.InputTokens)
	add(&r.Budget.Limit.OutputTokens, a.OutputTokens)
	r.Budget.Raises++
	return r.Budget.left()
}

// subTaskBudget is the budget a sub-task starts with: the capability's
// share, at most what is left (all that is left without a share), held
// for it while it runs. A sub-task never waits for a raise (nobody raises
// a sub-task's budget): it fails BUDGET_EXCEEDED, and the model reads why.
// on: rules.spendBudget.
func (r *budgetRecord) subTaskBudget(on bool, c contract.Capability, childID string) *contract.Budget {
	b := r.Budget
	if !on || (b == nil && c.Budget == nil) {
		return nil
	}
	if b == nil { // the share alone bounds it
		return &contract.Budget{Amounts: *c.Budget, OnExhausted: contract.OnExhaustedFail}
	}
	share := b.left()
	if c.Budget != nil {
		share = share.Min(*c.Budget)
	}
	amount := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	b.Held = append(b.Held, heldShare{ID: childID, Share: contract.Spend{Units: amount(share.Units), InputTokens: amount(share.InputTokens), OutputTokens: amount(share.OutputTokens)}})
	return &contract.Budget{Amounts: share, OnExhausted: contract.OnExhaustedFail}
}

// endSubTaskBudget releases the sub-task's share and counts what it used:
// its result's (or its failure's) budget, else, when it left none (it was
// canceled or never started), the whole share.
func (r *budgetRecord) endSubTaskBudget(childID string, res *contract.Result, err error) {
	b := r.Budget
	if b == nil {
		return
	}
	var share contract.Spend
	for i, h := range b.Held {
		if h.ID == childID {
			share = h.Share
			b.Held = append(b.Held[:i:i], b.Held[i+1:]...)
			break
		}
	}
	used := share
	switch {
	case err == nil && res != nil && res.Budget != nil:
		used = res.Budget.Used
	case err != nil:
		var ae *temporal.ApplicationError
		var d contract.BudgetExceeded
		if errors.As(err, &ae) && ae.HasDetails() && ae.Details(&d) == nil && d.Budget.Limit.Amounts != (contract.Amounts{}) {
			used = d.Budget.Used
		}
	}
	b.Used = b.Used.Plus(used)
}

// isBudgetExceeded reports whether err is the task's BUDGET_EXCEEDED failure.
func isBudgetExceeded(err error) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Type() == contract.ErrBudgetExceeded
}

// budgetDetails are the details of any failure of a task with a budget:
// a parent counts what its failed sub-task used from them. c is the task's
// state (nil before it has one), args its start argument, w the call
// waiting for a raise.
func budgetDetails(c *Carry, args *StartArgs, w budgetWait) *contract.BudgetExceeded {
	if c == nil || !c.hasBudget() {
		return nil
	}
	records, _ := c.records(c.secrets(args))
	return &contract.BudgetExceeded{Records: records, Usage: c.used(), Budget: *c.budgetStatus(w)}
}

func spendText(s contract.Spend) string {
	return fmt.Sprintf("%d units, %d input and %d output tokens", s.Units, s.InputTokens, s.OutputTokens)
}

func amountsText(a contract.Amounts) string {
	v := func(p *int64) string {
		if p == nil {
			return "unlimited"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("%s units, %s input and %s output tokens", v(a.Units), v(a.InputTokens), v(a.OutputTokens))
}

// budgetRecord is the carried part of the budget.
type budgetRecord struct {
	// Budget is the task's budget, what it used and holds for sub-tasks
	// (rules.spendBudget).
	Budget *budgetState `json:"budget,omitempty"`
}
