package catalog

import (
	"math"
	"math/big"
)

// Units is the cost of a call in units: inputTokens × input price plus
// outputTokens × output price, rounded up to a whole unit. It is computed
// exactly, so 10 tokens at 0.1 cost 1 unit, not 2 as float64 rounding could
// make it. Negative token counts count as 0, and a cost beyond int64 is
// reported as math.MaxInt64 so that budgets fail closed.
func (m Model) Units(inputTokens, outputTokens int64) int64 {
	cost := new(big.Rat).Mul(m.InputUnitsPerToken.Rat(), new(big.Rat).SetInt64(max(inputTokens, 0)))
	cost.Add(cost, new(big.Rat).Mul(m.OutputUnitsPerToken.Rat(), new(big.Rat).SetInt64(max(outputTokens, 0))))
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

// WorstCase is the most a call can cost, with the token counts it assumes.
type WorstCase struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	Units        int64 `json:"units"`
}

// WorstCase bounds the cost of a call sending inputTokens and asking for at
// most outputTokens. The model cannot produce more than MaxTokens, so output
// is capped there, and a non-positive outputTokens (no limit asked for)
// means MaxTokens.
func (m Model) WorstCase(inputTokens, outputTokens int64) WorstCase {
	limit := int64(m.MaxTokens)
	if outputTokens <= 0 || outputTokens > limit {
		outputTokens = limit
	}
	inputTokens = max(inputTokens, 0)
	return WorstCase{
		InputTokens:  inputTokens,
		OutputTokens: outputTokens,
		Units:        m.Units(inputTokens, outputTokens),
	}
}
