package main

import (
	"flag"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

// The budget flags of start, rescue and resume: --budget-units N,
// --budget-input-tokens N, --budget-output-tokens N, --on-exhausted wait|fail.
func budgetFlags(fs *flag.FlagSet, o *options) {
	fs.Int64Var(&o.budgetUnits, "budget-units", 0, "the task's budget in the catalogue's units")
	fs.Int64Var(&o.budgetInputTokens, "budget-input-tokens", 0, "the task's budget of input tokens")
	fs.Int64Var(&o.budgetOutputTokens, "budget-output-tokens", 0, "the task's budget of output tokens")
	fs.StringVar(&o.onExhausted, "on-exhausted", "", "wait (the default: awaiting_budget until raise-budget) or fail (BUDGET_EXCEEDED)")
}

// budgetFlagNames are the flags budgetFlags declares.
var budgetFlagNames = []string{"budget-units", "budget-input-tokens", "budget-output-tokens", "on-exhausted"}

// budget is the budget the flags give; nil when none of them is given.
func (x *cli) budget() (*contract.Budget, error) {
	var b contract.Budget
	if x.set["budget-units"] {
		b.Units = contract.Amount(x.opt.budgetUnits)
	}
	if x.set["budget-input-tokens"] {
		b.InputTokens = contract.Amount(x.opt.budgetInputTokens)
	}
	if x.set["budget-output-tokens"] {
		b.OutputTokens = contract.Amount(x.opt.budgetOutputTokens)
	}
	noAmount := b.Amounts == (contract.Amounts{})
	switch {
	case x.set["on-exhausted"] && noAmount:
		return nil, usagef("%s: --on-exhausted needs a budget: give --budget-units, --budget-input-tokens or --budget-output-tokens", x.name)
	case noAmount:
		return nil, nil
	}
	b.OnExhausted = x.opt.onExhausted
	if err := contract.CheckBudget("budget", b); err != nil {
		return nil, err
	}
	return &b, nil
}

// raise-budget TASK_ID [--units N] [--input-tokens N] [--output-tokens N] [--by NAME].
func raiseFlags(fs *flag.FlagSet, o *options) {
	fs.Int64Var(&o.raiseUnits, "units", 0, "units to add to the budget")
	fs.Int64Var(&o.raiseInputTokens, "input-tokens", 0, "input tokens to add to the budget")
	fs.Int64Var(&o.raiseOutputTokens, "output-tokens", 0, "output tokens to add to the budget")
	fs.StringVar(&o.by, "by", "", "who raised it, such as a user ID (logged)")
}

func raiseBudget(x *cli, pos []string) (any, error) {
	id, err := oneTaskID(x.name, pos)
	if err != nil {
		return nil, err
	}
	r := contract.RaiseBudgetArgs{By: x.opt.by}
	if x.set["units"] {
		r.Units = contract.Amount(x.opt.raiseUnits)
	}
	if x.set["input-tokens"] {
		r.InputTokens = contract.Amount(x.opt.raiseInputTokens)
	}
	if x.set["output-tokens"] {
		r.OutputTokens = contract.Amount(x.opt.raiseOutputTokens)
	}
	if r.Amounts == (contract.Amounts{}) {
		return nil, usagef("raise-budget: give what to add: --units N, --input-tokens N or --output-tokens N")
	}
	// Refuse a bad argument before dialing: no server is needed to learn it.
	if err := starter.CheckRaiseBudget(r); err != nil {
		return nil, err
	}
	c, err := x.client()
	if err != nil {
		return nil, err
	}
	return c.RaiseBudget(x.ctx, id, r)
}
