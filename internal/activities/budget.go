package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/llm"
)

// A task with a budget (contract.Budget, rules version 12) sends what is
// left of it with every call that may reach a model (ModelTurnInput.Budget,
// ShapeInput.Budget). Before each request the activity reserves the
// request's worst case: every byte of text it sends counted as a token (no
// tokenizer makes more tokens than bytes), images and documents at their
// estimate, and the answer at its maxTokens. A request that does not fit
// what is left is not sent: the call returns BudgetShort, with what its
// earlier requests used, and the workflow waits for a raise (or fails).
// Each request that answered is priced with the worker's catalogue.

// BudgetCheck is what a call may spend.
type BudgetCheck struct {
	Left contract.Amounts `json:"left"`
}

// Prices prices model calls: the worker's model catalogue (MODEL_CATALOG,
// else the built-in one; *catalog.Catalog).
type Prices interface {
	Get(name string) (catalog.Model, bool)
}

// errBudgetShort is a request not sent: its worst case did not fit.
var errBudgetShort = errors.New("the request's worst case does not fit what is left of the task's budget")

// budgetGuard keeps one activity's requests within what is left.
type budgetGuard struct {
	mu     sync.Mutex
	left   contract.Amounts
	prices Prices
	used   contract.Spend  // the requests that answered so far
	usage  Usage           // the same, as usage
	short  *contract.Spend // the worst case of the request not sent
	// book records the call's spending for its later attempts, carried
	// what its earlier attempts spent (spend_ledger.go; nil, zero: none).
	book    *spendBook
	carried Usage
	// answered counts this attempt's requests that answered.
	answered int
}

type budgetKey struct{}

// withBudget makes ctx carry the guard of check (nil: no budget), which
// starts from what the call's earlier attempts spent, by the ledger kept
// beside key (spend_ledger.go).
func (a *Activities) withBudget(ctx context.Context, check *BudgetCheck, key *TranscriptKey, r Retry) (context.Context, *budgetGuard, error) {
	if check == nil {
		return ctx, nil, nil
	}
	g, err := a.newBudgetGuard(ctx, check, a.openSpendBook(ctx, key, r))
	if err != nil {
		return ctx, nil, err // storage unavailable: retried
	}
	return context.WithValue(ctx, budgetKey{}, g), g, nil
}

// newBudgetGuard is the guard of one attempt, keeping its ledger in book.
func (a *Activities) newBudgetGuard(ctx context.Context, check *BudgetCheck, book *spendBook) (*budgetGuard, error) {
	g := &budgetGuard{left: check.Left, prices: a.Prices, book: book}
	carried, err := book.carried(ctx)
	if err != nil {
		return nil, err
	}
	g.used, g.usage, g.carried = carried.Used, carried.Usage, carried.Usage
	return g, nil
}

func guardOf(ctx context.Context) *budgetGuard {
	g, _ := ctx.Value(budgetKey{}).(*budgetGuard)
	return g
}

// reserve refuses req when its worst case does not fit what is left, and
// records the worst case as in flight before req is sent. The request it
// returns asks for at most the answer the worst case counted: a request
// without maxTokens gets the one reserved, so the provider's own default
// can never bill more than was reserved.
func (g *budgetGuard) reserve(ctx context.Context, req llm.Request) (llm.Request, error) {
	if g == nil {
		return req, nil
	}
	worst, err := g.worstCase(req)
	if err != nil {
		return req, err
	}
	if req.MaxTokens <= 0 {
		req.MaxTokens = int(worst.OutputTokens)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.remaining().Fits(worst) {
		g.short = &worst
		return req, errBudgetShort
	}
	return req, g.book.write(ctx, spendRecord{Used: g.used, Usage: g.usage, InFlight: worst})
}

// SpentOnFailure is the detail of a model call's failure under a budget:
// what its requests cost, every attempt's, so the workflow charges a call
// that failed for good after the provider billed it (rules version 14).
type SpentOnFailure struct {
	Spent *Usage `json:"spent_on_failure"`
}

// withSpent attaches what the call spent to its failure (err, as the
// retry logic returns it). A failure that carries details of its own keeps
// them; a call that spent nothing is returned as it is.
func (g *budgetGuard) withSpent(err error) error {
	if g == nil || err == nil {
		return err
	}
	g.mu.Lock()
	u := g.usage
	g.mu.Unlock()
	var ae *temporal.ApplicationError
	if u == (Usage{}) || !errors.As(err, &ae) || ae.HasDetails() {
		return err
	}
	return temporal.NewApplicationErrorWithOptions(ae.Message(), ae.Type(), temporal.ApplicationErrorOptions{
		NonRetryable: ae.NonRetryable(), Cause: errors.Unwrap(ae), NextRetryDelay: ae.NextRetryDelay(),
		Details: []any{SpentOnFailure{Spent: &u}}})
}

// remaining is what is left once this activity's requests are counted.
func (g *budgetGuard) remaining() contract.Amounts {
	less := func(p *int64, n int64) *int64 {
		if p == nil {
			return nil
		}
		v := *p - n
		return &v
	}
	return contract.Amounts{Units: less(g.left.Units, g.used.Units), InputTokens: less(g.left.InputTokens, g.used.InputTokens),
		OutputTokens: less(g.left.OutputTokens, g.used.OutputTokens)}
}

// worstCase is the most req can cost.
func (g *budgetGuard) worstCase(req llm.Request) (contract.Spend, error) {
	s := fixedSize(req)
	for _, m := range req.Messages {
		s = s.plus(messageSize(m))
	}
	in := int64(s.text + s.tokens) // a byte of text is at most a token
	m, priced := g.price(req.Model)
	out := int64(req.MaxTokens)
	if out <= 0 && priced {
		out = int64(m.MaxTokens)
	}
	if out <= 0 {
		out = int64(contract.DefaultContextTokens / 8) // the room contextLimit keeps for an answer
	}
	w := contract.Spend{InputTokens: in, OutputTokens: out}
	if g.left.Units != nil {
		if !priced {
			return w, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"budget.units: the model %q has no price in this worker's model catalogue (%s), so its calls cannot be counted in units; add it to the catalogue, or budget inputTokens and outputTokens instead", req.Model, catalog.EnvCatalog),
				contract.ErrInvalidInput, nil)
		}
		w.Units = m.WorstCase(in, out).Units
	}
	return w, nil
}

func (g *budgetGuard) price(model string) (catalog.Model, bool) {
	if g.prices == nil {
		return catalog.Model{}, false
	}
	return g.prices.Get(model)
}

// charge counts a request that answered and returns its units (0 when
// its model has no price).
func (g *budgetGuard) charge(ctx context.Context, model string, u contract.Usage) int64 {
	if g == nil {
		return 0
	}
	var units int64
	if m, ok := g.price(model); ok {
		units = m.UnitsOf(catalog.Tokens{Input: int64(u.InputTokens), Output: int64(u.OutputTokens),
			CacheRead: int64(u.CacheReadTokens), CacheWrite: int64(u.CacheWriteTokens)})
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.used = g.used.Plus(contract.Spend{Units: units, InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens)})
	g.usage = Usage{Usage: g.usage.Add(u), Units: g.usage.Units + units}
	g.answered++
	if err := g.book.write(ctx, spendRecord{Used: g.used, Usage: g.usage}); err != nil {
		// The record keeps this request in flight at its worst case: a
		// later attempt counts more than was spent, never less.
		activity.GetLogger(ctx).Warn("the budget's ledger could not record an answered request", "error", err)
	}
	return units
}

// settleTurn completes a ModelTurn under a budget: a request the budget
// refused makes a result that says so (no output, what was used), and an
// answer carries its units.
func (g *budgetGuard) settleTurn(res *ModelTurnResult, err error) (*ModelTurnResult, error) {
	if g == nil {
		return res, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if errors.Is(err, errBudgetShort) {
		return &ModelTurnResult{BudgetShort: g.short, Usage: g.usage, Offered: []string{}}, nil
	}
	if res != nil && g.answered > 0 { // else: an earlier attempt's answer, replayed with its own usage
		res.Usage = res.Usage.plusCarried(g.carried)
		res.Usage.Units = g.usage.Units
	}
	return res, err
}

// unitsUsed is what this activity's requests cost so far.
func (g *budgetGuard) unitsUsed() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.usage.Units
}

// settleShape is settleTurn for the shaping pass.
func (g *budgetGuard) settleShape(res *ShapeResult, err error) (*ShapeResult, error) {
	if g == nil {
		return res, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if errors.Is(err, errBudgetShort) {
		return &ShapeResult{BudgetShort: g.short, Usage: g.usage}, nil
	}
	if res != nil {
		if g.answered > 0 {
			res.Usage = res.Usage.plusCarried(g.carried)
		}
		res.Usage.Units = g.usage.Units
	}
	return res, err
}

// isBudgetShort reports whether err is a request the budget refused.
func isBudgetShort(err error) bool { return errors.Is(err, errBudgetShort) }
