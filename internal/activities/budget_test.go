package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/transcript"
)

// countingModel answers every request with fixed usage and counts them.
type countingModel struct{ calls int }

func (m *countingModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.calls++
	return llm.Response{Text: "ok", Model: req.Model, Usage: contract.Usage{InputTokens: 100, OutputTokens: 50}}, nil
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
	require.Equal(t, Usage{Usage: contract.Usage{InputTokens: 100, OutputTokens: 50}, Units: 1}, res.Usage)
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

// failingModel fails every request after it reached the provider (a
// transport error: what was billed is unknown).
type failingModel struct{ calls int }

func (m *failingModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.calls++
	return llm.Response{}, &llm.Error{Retryable: true, Message: "connection reset"}
}

// A call's attempts share one budget: an attempt whose request answered
// and which then failed, or whose request never answered, leaves its spend
// in the ledger beside the transcript, and the next attempt starts from it
// (the answered request at what it used, the unanswered one at its worst
// case), so a retry cannot spend past the budget and its result charges
// every attempt.
func TestBudgetLedgerCarriesSpendAcrossAttempts(t *testing.T) {
	ctx := context.Background()
	store, err := transcript.Open(ctx, "mem://")
	require.NoError(t, err)
	defer store.Close()
	tr := storeTranscript{s: store}
	key := TranscriptKey{TaskID: "t1", FirstRunID: "r1"}
	book := func(attempt int) *spendBook {
		return &spendBook{tr: tr, key: key, call: "model:t3:r1", attempt: attempt}
	}
	answers := &countingModel{}
	a := &Activities{Models: answers} // a token budget: no prices, no units
	check := &BudgetCheck{Left: contract.Amounts{InputTokens: contract.Amount(1000), OutputTokens: contract.Amount(1000)}}
	// 96 bytes + 4 framing = a worst case of 100 input tokens, 100 output.
	req := llm.Request{Model: "test/echo", MaxTokens: 100, Messages: []llm.Message{{Role: llm.RoleUser, Content: string(make([]byte, 96))}}}
	send := func(g *budgetGuard) error {
		_, err := a.complete(context.WithValue(ctx, budgetKey{}, g), req)
		return err
	}

	// Attempt 1: the request answers (100 in, 50 out), then the attempt fails.
	g1, err := a.newBudgetGuard(ctx, check, book(1))
	require.NoError(t, err)
	require.NoError(t, send(g1))

	// Attempt 2 starts from what attempt 1 used; its request reaches the
	// provider and never answers.
	g2, err := a.newBudgetGuard(ctx, check, book(2))
	require.NoError(t, err)
	require.Equal(t, contract.Spend{InputTokens: 100, OutputTokens: 50}, g2.used)
	a.Models = &failingModel{}
	require.Error(t, send(g2))

	// Attempt 3 counts that request at its worst case too.
	g3, err := a.newBudgetGuard(ctx, check, book(3))
	require.NoError(t, err)
	require.Equal(t, contract.Spend{InputTokens: 200, OutputTokens: 150}, g3.used)
	a.Models = answers
	require.NoError(t, send(g3))
	res, err := g3.settleTurn(&ModelTurnResult{Calls: 1, Usage: Usage{Usage: contract.Usage{InputTokens: 100, OutputTokens: 50}}}, nil)
	require.NoError(t, err)
	require.Equal(t, Usage{Usage: contract.Usage{InputTokens: 300, OutputTokens: 200}}, res.Usage, "the result charges every attempt")

	// An attempt after one killed before it wrote anything still finds
	// the last record, and the budget holds across attempts: 300 input
	// tokens spent of 350 leave no room for a worst case of 100.
	g5, err := a.newBudgetGuard(ctx, &BudgetCheck{Left: contract.Amounts{InputTokens: contract.Amount(350)}}, book(5))
	require.NoError(t, err)
	require.Equal(t, contract.Spend{InputTokens: 300, OutputTokens: 200}, g5.used)
	calls := answers.calls
	require.True(t, isBudgetShort(send(g5)), "300 of 350 spent by earlier attempts leaves no room for a worst case of 100")
	require.Equal(t, calls, answers.calls, "the refused request was never sent")
}

// maxTokensModel records the maxTokens each request asked for.
type maxTokensModel struct{ asked []int }

func (m *maxTokensModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.asked = append(m.asked, req.MaxTokens)
	return llm.Response{Text: "ok", Model: req.Model, Usage: contract.Usage{InputTokens: 10, OutputTokens: 5}}, nil
}

// A request without maxTokens under a budget is sent with the answer size
// its reservation counted, so the provider's default can never bill more
// than was reserved; one with maxTokens keeps it.
func TestBudgetedRequestAsksForNoMoreThanItReserved(t *testing.T) {
	model := &maxTokensModel{}
	a := &Activities{Models: model}
	g := &budgetGuard{left: contract.Amounts{OutputTokens: contract.Amount(1_000_000)}}
	ctx := context.WithValue(context.Background(), budgetKey{}, g)
	_, err := a.complete(ctx, llm.Request{Model: "acme/unknown", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	_, err = a.complete(ctx, llm.Request{Model: "acme/unknown", MaxTokens: 77, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	require.Equal(t, []int{contract.DefaultContextTokens / 8, 77}, model.asked)
	_, err = (&Activities{Models: model}).complete(context.Background(), llm.Request{Model: "acme/unknown"})
	require.NoError(t, err)
	require.Equal(t, 0, model.asked[2], "without a budget the request is sent as it is")
}

// A call that fails for good after its requests were billed carries what
// they cost in its failure, every attempt's: the workflow charges it.
func TestAFailedCallCarriesWhatItSpent(t *testing.T) {
	g := &budgetGuard{usage: Usage{Usage: contract.Usage{InputTokens: 396, OutputTokens: 12}, Units: 3}}
	err := g.withSpent(temporal.NewNonRetryableApplicationError("the answer did not fit the schema", contract.ErrModel, nil))
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.True(t, ae.NonRetryable())
	require.Equal(t, contract.ErrModel, ae.Type())
	require.Equal(t, "the answer did not fit the schema", ae.Message())
	var d SpentOnFailure
	require.NoError(t, ae.Details(&d))
	require.Equal(t, &Usage{Usage: contract.Usage{InputTokens: 396, OutputTokens: 12}, Units: 3}, d.Spent)

	retryable := g.withSpent(temporal.NewApplicationError("model unavailable", "MODEL_UNAVAILABLE"))
	require.ErrorAs(t, retryable, &ae)
	require.False(t, ae.NonRetryable(), "a retryable failure stays retryable")
	require.Nil(t, (*budgetGuard)(nil).withSpent(nil))
	own := temporal.NewNonRetryableApplicationError("unfit", "OUTPUT_UNFIT", nil, "records")
	require.Same(t, own, g.withSpent(own), "a failure with details of its own keeps them")
	spentNothing := &budgetGuard{}
	plain := temporal.NewNonRetryableApplicationError("x", contract.ErrModel, nil)
	require.Same(t, plain, spentNothing.withSpent(plain))
}

// Each execution of a call keeps its own ledger: a call the budget refused
// is made again after a raise under the same call ID, and its attempts
// never read the refused execution's records.
func TestTheSpendLedgerIsPerExecution(t *testing.T) {
	ctx := context.Background()
	store, err := transcript.Open(ctx, "mem://")
	require.NoError(t, err)
	defer store.Close()
	tr := storeTranscript{s: store}
	key := TranscriptKey{TaskID: "t1", FirstRunID: "r1"}
	a := &Activities{Models: &countingModel{}}
	check := &BudgetCheck{Left: contract.Amounts{InputTokens: contract.Amount(1000), OutputTokens: contract.Amount(1000)}}
	req := llm.Request{Model: "test/echo", MaxTokens: 100, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	first, err := a.newBudgetGuard(ctx, check, &spendBook{tr: tr, key: key, call: "model:t2:r1", activity: "11", attempt: 1})
	require.NoError(t, err)
	_, err = a.complete(context.WithValue(ctx, budgetKey{}, first), req)
	require.NoError(t, err)
	// The next execution (another activity ID) of the same call: its
	// second attempt finds no record of its own first attempt (killed
	// before writing), and must not take the first execution's.
	again, err := a.newBudgetGuard(ctx, check, &spendBook{tr: tr, key: key, call: "model:t2:r1", activity: "17", attempt: 2})
	require.NoError(t, err)
	require.Equal(t, contract.Spend{}, again.used, "the earlier execution's spend was charged with its own result")
}
