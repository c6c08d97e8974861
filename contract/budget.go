package contract

import "strings"

// Durable budgets (docs/budgets.md): what a task, its sub-tasks included,
// may spend on model calls. Before each model call the runtime reserves the
// call's worst case (every byte the request sends counted as a token, the
// answer at its maxTokens); a call whose worst case does not fit what is
// left is not made. The task then waits in state awaiting_budget for the
// raise-budget update, or, with onExhausted "fail", fails with
// BUDGET_EXCEEDED. The budget is workflow state: it survives continue-as-new,
// a worker's crash, and is handed to a rescued or resumed task (what is left).

// UpdateRaiseBudget raises a task's budget (arg: RaiseBudgetArgs; returns
// BudgetStatus). Its validator refuses a task without a budget and amounts
// that are not positive.
const UpdateRaiseBudget = "raise-budget"

// StateAwaitingBudget: the next model call's worst case does not fit what
// is left of the budget; the task waits for raise-budget (its inputs still
// queue, nothing is lost).
const StateAwaitingBudget State = "awaiting_budget"

// AgentStateAwaitingBudget is the AgentState search attribute's value while
// the task waits for a raise.
const AgentStateAwaitingBudget = "awaiting_budget"

// What a task does when the next call does not fit its budget.
const (
	OnExhaustedWait = "wait" // the default: awaiting_budget until raise-budget
	OnExhaustedFail = "fail" // BUDGET_EXCEEDED at once
)

// MaxBudgetAmount bounds every amount of a budget (and what a raise adds):
// far beyond any real spend, and far from int64's end so sums never wrap.
const MaxBudgetAmount = int64(1) << 50

// Amounts are limits by dimension; nil is no limit on that dimension.
// Units are the catalogue's units (GET /v1/models; MODEL_CATALOG), which
// the worker prices each call with.
type Amounts struct {
	Units        *int64 `json:"units,omitempty"`
	InputTokens  *int64 `json:"inputTokens,omitempty"`
	OutputTokens *int64 `json:"outputTokens,omitempty"`
}

// Budget is StartArgs budget: at least one amount, each in [0, MaxBudgetAmount].
type Budget struct {
	Amounts
	OnExhausted string `json:"onExhausted,omitempty"` // wait (default) | fail
}

// Spend is what was used, or is reserved, in every dimension.
type Spend struct {
	Units        int64 `json:"units"`
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
}

// Plus sums spends.
func (s Spend) Plus(o Spend) Spend {
	return Spend{Units: s.Units + o.Units, InputTokens: s.InputTokens + o.InputTokens, OutputTokens: s.OutputTokens + o.OutputTokens}
}

// Minus is s less o, never below 0 in any dimension.
func (s Spend) Minus(o Spend) Spend {
	return Spend{Units: max(0, s.Units-o.Units), InputTokens: max(0, s.InputTokens-o.InputTokens), OutputTokens: max(0, s.OutputTokens-o.OutputTokens)}
}

// BudgetStatus is status.budget and the reply of raise-budget.
type BudgetStatus struct {
	Limit Budget `json:"limit"` // as started, plus every raise
	// Used is what the task's model calls and its ended sub-tasks used.
	Used Spend `json:"used"`
	// Reserved is held for the sub-tasks running now (each its share).
	Reserved Spend `json:"reserved"`
	// Left is Limit - Used - Reserved in each limited dimension (never
	// below 0; a call that used more than its estimate can overdraw Used).
	Left Amounts `json:"left"`
	// Needed, while the task is awaiting_budget, is the worst case of the
	// call that waits: raise the budget so Left covers it.
	Needed *Spend `json:"needed,omitempty"`
	// Raises counts the raise-budget updates taken.
	Raises int `json:"raises"`
}

// RaiseBudgetArgs is the raise-budget update's argument: amounts added to
// the budget's limits, each positive, each in a dimension the budget limits.
type RaiseBudgetArgs struct {
	Amounts
	By string `json:"by,omitempty"` // who raised it, at most 256 bytes (logged)
}

// BudgetExceeded is the details of a BUDGET_EXCEEDED failure: what the task
// had collected and used, so nothing it did is lost with it.
type BudgetExceeded struct {
	Records []Collected  `json:"records"`
	Usage   Usage        `json:"usage"`
	Budget  BudgetStatus `json:"budget"`
}

// CheckBudget checks a budget (path names it in the message).
func CheckBudget(path string, b Budget) error {
	if b.Units == nil && b.InputTokens == nil && b.OutputTokens == nil {
		return Invalid("%s: give at least one of units, inputTokens, outputTokens, such as {\"units\": 5000}", path)
	}
	if err := checkAmounts(path, b.Amounts, 0); err != nil {
		return err
	}
	switch b.OnExhausted {
	case "", OnExhaustedWait, OnExhaustedFail:
	default:
		return Invalid("%s.onExhausted: %q must be \"wait\" (the default: the task waits for raise-budget) or \"fail\" (BUDGET_EXCEEDED)", path, b.OnExhausted)
	}
	return nil
}

// CheckRaise checks a raise against the budget it raises.
func CheckRaise(limit Budget, r RaiseBudgetArgs) error {
	if r.Units == nil && r.InputTokens == nil && r.OutputTokens == nil {
		return Invalid("raise-budget: give at least one of units, inputTokens, outputTokens to add, such as {\"units\": 1000}")
	}
	if err := checkAmounts("raise-budget", r.Amounts, 1); err != nil {
		return err
	}
	for _, d := range []struct {
		name       string
		add, limit *int64
	}{{"units", r.Units, limit.Units}, {"inputTokens", r.InputTokens, limit.InputTokens}, {"outputTokens", r.OutputTokens, limit.OutputTokens}} {
		if d.add != nil && d.limit == nil {
			return Invalid("raise-budget.%s: this task's budget does not limit %s; raise only %s", d.name, d.name, limitedNames(limit))
		}
		if d.add != nil && *d.limit+*d.add > MaxBudgetAmount {
			return Invalid("raise-budget.%s: the budget would be over %d", d.name, MaxBudgetAmount)
		}
	}
	if len(r.By) > 256 {
		return Invalid("raise-budget.by: at most 256 bytes")
	}
	return nil
}

func checkAmounts(path string, a Amounts, least int64) error {
	for _, d := range []struct {
		name string
		v    *int64
	}{{"units", a.Units}, {"inputTokens", a.InputTokens}, {"outputTokens", a.OutputTokens}} {
		if d.v != nil && (*d.v < least || *d.v > MaxBudgetAmount) {
			return Invalid("%s.%s: %d must be between %d and %d", path, d.name, *d.v, least, MaxBudgetAmount)
		}
	}
	return nil
}

func limitedNames(b Budget) string {
	var out []string
	if b.Units != nil {
		out = append(out, "units")
	}
	if b.InputTokens != nil {
		out = append(out, "inputTokens")
	}
	if b.OutputTokens != nil {
		out = append(out, "outputTokens")
	}
	return strings.Join(out, ", ")
}

// Fits reports whether need fits left in every limited dimension.
func (a Amounts) Fits(need Spend) bool {
	return (a.Units == nil || need.Units <= *a.Units) &&
		(a.InputTokens == nil || need.InputTokens <= *a.InputTokens) &&
		(a.OutputTokens == nil || need.OutputTokens <= *a.OutputTokens)
}

// Min is the smaller of a and b in each dimension (nil: no limit).
func (a Amounts) Min(b Amounts) Amounts {
	pick := func(x, y *int64) *int64 {
		switch {
		case x == nil:
			return y
		case y == nil:
			return x
		case *y < *x:
			return y
		}
		return x
	}
	return Amounts{Units: pick(a.Units, b.Units), InputTokens: pick(a.InputTokens, b.InputTokens), OutputTokens: pick(a.OutputTokens, b.OutputTokens)}
}

// Amount is a limit of n.
func Amount(n int64) *int64 { return &n }
