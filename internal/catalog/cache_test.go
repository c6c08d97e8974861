package catalog

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnitsOfPricesCachedTokens(t *testing.T) {
	m := Model{Name: "x/y", MaxTokens: 100, InputUnitsPerToken: mustPrice("0.01"), OutputUnitsPerToken: mustPrice("0.02"),
		CachedInputUnitsPerToken: pricePtr("0.001"), CacheWriteUnitsPerToken: pricePtr("0.0125")}
	// 1000 input of which 600 read and 200 written: 200*0.01 + 600*0.001 + 200*0.0125 + 100*0.02 = 2+0.6+2.5+2 = 7.1 -> 8
	require.Equal(t, int64(8), m.UnitsOf(Tokens{Input: 1000, CacheRead: 600, CacheWrite: 200, Output: 100}))
	// Without cached tokens it is Units.
	require.Equal(t, m.Units(1000, 100), m.UnitsOf(Tokens{Input: 1000, Output: 100}))
	require.Equal(t, int64(12), m.Units(1000, 100))

	// No cache prices: cached tokens cost as input.
	plain := Model{Name: "x/z", MaxTokens: 100, InputUnitsPerToken: mustPrice("0.01"), OutputUnitsPerToken: mustPrice("0.02")}
	require.Equal(t, plain.Units(1000, 100), plain.UnitsOf(Tokens{Input: 1000, CacheRead: 600, CacheWrite: 200, Output: 100}))
}

func TestWorstCaseUsesTheDearestInputPrice(t *testing.T) {
	m := Model{Name: "x/y", MaxTokens: 100, InputUnitsPerToken: mustPrice("0.01"), OutputUnitsPerToken: mustPrice("0.02"),
		CachedInputUnitsPerToken: pricePtr("0.001"), CacheWriteUnitsPerToken: pricePtr("0.0125")}
	// 1000 input, all written to the cache (the dearest): 12.5 + 100*0.02 = 14.5 -> 15.
	require.Equal(t, int64(15), m.WorstCase(1000, 0).Units)
	cheap := m
	cheap.CacheWriteUnitsPerToken = pricePtr("0.005")
	require.Equal(t, cheap.Units(1000, 100), cheap.WorstCase(1000, 0).Units)
}

func TestParseCachePrices(t *testing.T) {
	c, err := Parse([]byte(`{"models":[{"name":"a/b","maxTokens":10,"inputUnitsPerToken":0.01,"outputUnitsPerToken":0.02,"cachedInputUnitsPerToken":0.001,"cacheWriteUnitsPerToken":0.0125}]}`))
	require.NoError(t, err)
	m, _ := c.Get("a/b")
	require.Equal(t, "0.001", m.CachedInputUnitsPerToken.String())
	require.Equal(t, "0.0125", m.CacheWriteUnitsPerToken.String())
	out, err := json.Marshal(m)
	require.NoError(t, err)
	require.Contains(t, string(out), `"cachedInputUnitsPerToken":0.001,"cacheWriteUnitsPerToken":0.0125`)

	_, err = Parse([]byte(`{"models":[{"name":"a/b","maxTokens":10,"inputUnitsPerToken":0.01,"outputUnitsPerToken":0.02,"cachedInputUnitsPerToken":"0.1"}]}`))
	require.ErrorContains(t, err, "models[0].cachedInputUnitsPerToken")
}
