package catalog

import (
	"math"
	"math/big"
)

// Tokens is what a call used, as llm.Usage reports it: Input counts every
// prompt token, CacheRead and CacheWrite of them included.
type Tokens struct {
	Input, Output, CacheRead, CacheWrite int64
}

// Units is the cost of a call in units: inputTokens × input price plus
// outputTokens × output price, rounded up to a whole unit. It is computed
// exactly, so 10 tokens at 0.1 cost 1 unit, not 2 as float64 rounding could
// make it. Negative token counts count as 0, and a cost beyond int64 is
// reported as math.MaxInt64 so that budgets fail closed.
func (m Model) Units(inputTokens, outputTokens int64) int64 {
	return m.UnitsOf(Tokens{Input: inputTokens, Output: outputTokens})
}

// UnitsOf is Units with cached tokens: cache reads at the cached price and
// cache writes at the write price (each at the input price when the model
// gives none), the rest of the input at the input price.
func (m Model) UnitsOf(t Tokens) int64 {
	read, write := max(t.CacheRead, 0), max(t.CacheWrite, 0)
	plain := max(t.Input, 0) - read - write
	if plain < 0 { // a provider that reported cached tokens beyond its input: bill them all as cached
		plain = 0
	}
	cost := new(big.Rat)
	add := func(p Price, n int64) {
		cost.Add(cost, new(big.Rat).Mul(p.Rat(), new(big.Rat).SetInt64(n)))
	}
	add(m.InputUnitsPerToken, plain)
	add(m.cachedPrice(), read)
	add(m.writePrice(), write)
	add(m.OutputUnitsPerToken, max(t.Output, 0))
	// cost ≥ 0, so the truncating quotient is the floor; add one unless exact.
	q, r := new(big.Int).QuoRem(cost.Num(), cost.Denom(), new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return math.MaxInt64
	}
	return q.Int64()
}

func (m Model) cachedPrice() Price {
	if m.CachedInputUnitsPerToken != nil {
		return *m.CachedInputUnitsPerToken
	}
	return m.InputUnitsPerToken
}

func (m Model) writePrice() Price {
	if m.CacheWriteUnitsPerToken != nil {
		return *m.CacheWriteUnitsPerToken
	}
	return m.InputUnitsPerToken
}

// WorstCase is the most a call can cost, with the token counts it assumes.
type WorstCase struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	Units        int64 `json:"units"`
}

// WorstCase bounds the cost of a call sending inputTokens and asking for at
// most outputTokens. The model cannot produce more than MaxTokens, so output
// is capped there, and a non-positive outputTokens (no limit asked for)
// means MaxTokens. Every input token is assumed to be billed at the dearest
// input price, which is the cache write price where that is higher.
func (m Model) WorstCase(inputTokens, outputTokens int64) WorstCase {
	limit := int64(m.MaxTokens)
	if outputTokens <= 0 || outputTokens > limit {
		outputTokens = limit
	}
	inputTokens = max(inputTokens, 0)
	t := Tokens{Input: inputTokens, Output: outputTokens}
	dearest := m.InputUnitsPerToken.Rat()
	if p := m.writePrice().Rat(); p.Cmp(dearest) > 0 {
		t.CacheWrite, dearest = inputTokens, p
	}
	if p := m.cachedPrice().Rat(); p.Cmp(dearest) > 0 {
		t.CacheRead, t.CacheWrite = inputTokens, 0
	}
	return WorstCase{InputTokens: inputTokens, OutputTokens: outputTokens, Units: m.UnitsOf(t)}
}
