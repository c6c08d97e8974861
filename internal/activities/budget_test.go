package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/llm"
)

// countingModel answers every request with fixed usage and counts them.
type countingModel struct{ calls int }

func (m *countingModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.calls++
	return llm.Response{Text: "ok", Model: req.Model, Usage: llm.Usage{InputTokens: 100, OutputTokens: 50}}, nil
}

// A request is sent only while its worst case (text bytes as tokens, the
// answer at maxTokens, priced by the catalogue) fits what is left; each
// answered request is charged what it used.
func TestBudgetGuardReservesTheWorstCase(t *testing.T) {
	model := &countingModel{}
	a := &Activities{Models: model, Prices: catalog.Builtin()}
	req := llm.Request{Model: "test/echo", MaxTokens: 100, Messages: []llm.Message{{Role: llm.RoleUser, Content: string(make([]byte, 396))}}}
	// 396 bytes + 4 framing = 400 input tokens at 0.001, 100 output at 0.002: 0.6 → 1 unit worst case.
	g := &budgetGuard{left: contract.Amounts{InputTokens: contract.Amount(450), Units: contract.Amount(5)}, prices: a.Prices}
	w, err := g.worstCase(req)
	require.NoError(t, err)
	require.Equal(t, contract.Spend{Units: 1, InputTokens: 400, OutputTokens: 100}, w)

	ctx := context.WithValue(context.Background(), budgetKey{}, g)
	_, err = a.complete(ctx, req)
	require.NoError(t, err)
	require.Equal(t, 1, model.calls)
	require.Equal(t, contract.Spend{Units: 1, InputTokens: 100, OutputTokens: 50}, g.used) // 0.1+0.1 → 1
	_, err = a.complete(ctx, req)                                                          // 350 input tokens left < 400
	require.True(t, isBudgetShort(err), "%v", err)
	require.Equal(t, 1, model.calls, "a request that does not fit is never sent")

	res, err := g.settleTurn(nil, err)
	require.NoError(t, err)
	require.Equal(t, &w, res.BudgetShort)
	require.Equal(t, Usage{InputTokens: 100, OutputTokens: 50, Units: 1}, res.Usage)
}

// A units budget needs the model's price: without one, the call fails at
// once with a corrective message instead of spending uncounted.
func TestBudgetGuardRefusesAnUnpricedModelForUnits(t *testing.T) {
	g := &budgetGuard{left: contract.Amounts{Units: contract.Amount(5)}, prices: catalog.Builtin()}
	_, err := g.worstCase(llm.Request{Model: "acme/unknown"})
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.True(t, ae.NonRetryable())
	require.Equal(t, contract.ErrInvalidInput, ae.Type())
	require.Contains(t, ae.Message(), "no price in this worker's model catalogue")
	// Token budgets need no price.
	g = &budgetGuard{left: contract.Amounts{OutputTokens: contract.Amount(5)}, prices: catalog.Builtin()}
	w, err := g.worstCase(llm.Request{Model: "acme/unknown"})
	require.NoError(t, err)
	require.Equal(t, int64(contract.DefaultContextTokens/8), w.OutputTokens)
}
