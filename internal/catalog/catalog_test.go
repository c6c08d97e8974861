package catalog

import (
	"encoding/json"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func model(in, out string) Model {
	return Model{Name: "t/m", MaxTokens: 100, InputUnitsPerToken: mustPrice(in), OutputUnitsPerToken: mustPrice(out)}
}

func TestUnitsExact(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in, out   string
		inT, outT int64
		want      int64
	}{
		{"0.1x3 is 0.3, rounds up to 1", "0.1", "0", 3, 0, 1},
		{"0.1x10 is exactly 1", "0.1", "0", 10, 0, 1},
		{"0.1+0.2 is 0.3, not 0.30000000000000004", "0.1", "0.2", 1, 1, 1},
		{"0.1x10+0.2x10 is exactly 3", "0.1", "0.2", 10, 10, 3},
		{"1e-18 x 10^18 is exactly 1", "0.000000000000000001", "0", 1_000_000_000_000_000_000, 0, 1},
		{"1e-18 x (10^18+1) rounds up to 2", "0.000000000000000001", "0", 1_000_000_000_000_000_001, 0, 2},
		{"exponent form", "1E-1", "0", 10, 0, 1},
		{"integers stay", "2", "3", 5, 7, 31},
		{"free", "0", "0", 1000, 1000, 0},
		{"tiny non-zero still costs a unit", "0.000001", "0", 1, 0, 1},
		{"negative tokens count as 0", "1", "1", -5, 2, 2},
		{"overflow saturates", "1000", "0", math.MaxInt64, 0, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, model(tc.in, tc.out).Units(tc.inT, tc.outT))
		})
	}
	// The float64 trap this guards against (variables: Go constants are exact).
	a, b := 0.1, 0.2
	require.NotEqual(t, 0.3, a+b)
}

func TestBuiltinUnits(t *testing.T) {
	echo, ok := Builtin().Get("test/echo")
	require.True(t, ok)
	require.Equal(t, int64(3), echo.Units(1000, 1000)) // 1 + 2, exactly
	require.Equal(t, int64(1), echo.Units(1, 0))
}

func TestWorstCase(t *testing.T) {
	m := model("0.001", "0.002") // MaxTokens 100
	require.Equal(t, WorstCase{InputTokens: 1000, OutputTokens: 50, Units: 2}, m.WorstCase(1000, 50))
	require.Equal(t, WorstCase{InputTokens: 1000, OutputTokens: 100, Units: 2}, m.WorstCase(1000, 5000))
	require.Equal(t, WorstCase{InputTokens: 0, OutputTokens: 100, Units: 1}, m.WorstCase(-1, 0))
	b, err := json.Marshal(m.WorstCase(10, 10))
	require.NoError(t, err)
	require.JSONEq(t, `{"inputTokens":10,"outputTokens":10,"units":1}`, string(b))
}

func TestPriceRoundTrip(t *testing.T) {
	for _, text := range []string{"0", "0.00015", "0.000000000000000001", "1.50", "15e-5", "1E+2", "123456789012345678901234567890.1"} {
		var p Price
		require.NoError(t, json.Unmarshal([]byte(text), &p), text)
		b, err := json.Marshal(p)
		require.NoError(t, err)
		require.Equal(t, text, string(b))
		require.Equal(t, text, p.String())
		want, _ := new(big.Rat).SetString(text)
		require.Zero(t, want.Cmp(p.Rat()), text)
	}
	var zero Price
	require.Equal(t, "0", zero.String())
	require.Zero(t, zero.Rat().Sign())

	// Rat hands out a copy.
	p := mustPrice("0.5")
	p.Rat().SetInt64(7)
	require.Equal(t, "1/2", p.Rat().String())
}

func TestPriceRefused(t *testing.T) {
	for _, text := range []string{`"0.1"`, `-0.1`, `-0`, `null`, `true`, `[]`, `{}`, `1e999999999`} {
		var p Price
		require.Error(t, json.Unmarshal([]byte(text), &p), text)
	}
	for _, s := range []string{"", "1/3", "0x10", " 1", "1 ", ".5", "NaN", "Inf"} {
		_, err := ParsePrice(s)
		require.Error(t, err, s)
	}
}

func TestCatalogRoundTrip(t *testing.T) {
	models := Builtin().List()
	data, err := json.Marshal(map[string]any{"models": models})
	require.NoError(t, err)
	require.Contains(t, string(data), `"inputUnitsPerToken":0.00015`)
	c, err := Parse(data)
	require.NoError(t, err)
	require.Equal(t, models, c.List())
}

func TestBuiltin(t *testing.T) {
	c := Builtin()
	var names []string
	for _, m := range c.List() {
		require.NoError(t, m.validate(), m.Name)
		names = append(names, m.Name)
	}
	require.Equal(t, []string{"anthropic/claude-haiku-4-5", "anthropic/claude-sonnet-4-5", "anthropic/test-echo", "demo/offline",
		"google/gemini-2.5-flash", "google/test-echo", "openai/gpt-4o", "openai/gpt-4o-mini", "openai/o3-mini", "test/echo"}, names)
	o3, ok := c.Get("openai/o3-mini")
	require.True(t, ok)
	require.True(t, o3.Reasoning)
	require.Equal(t, 100000, o3.MaxTokens)
	require.Equal(t, "0.0044", o3.OutputUnitsPerToken.String())
	_, ok = c.Get("openai/nope")
	require.False(t, ok)
}

func TestParse(t *testing.T) {
	c, err := Parse([]byte(`{"models": [
		{"name": "z/last", "maxTokens": 1, "inputUnitsPerToken": 0, "outputUnitsPerToken": 0},
		{"name": "acme/m-1.5_x:latest", "maxTokens": 8, "reasoning": true, "inputUnitsPerToken": 0.1, "outputUnitsPerToken": 2e-3}
	]}`))
	require.NoError(t, err)
	list := c.List()
	require.Equal(t, "acme/m-1.5_x:latest", list[0].Name)
	require.Equal(t, "z/last", list[1].Name)
	require.True(t, list[0].Reasoning)
	require.Equal(t, "2e-3", list[0].OutputUnitsPerToken.String())

	// List returns copies.
	list[0].Name = "changed"
	require.Equal(t, "acme/m-1.5_x:latest", c.List()[0].Name)
}

func TestParseRefusals(t *testing.T) {
	const ok = `{"name": "a/b", "maxTokens": 10, "inputUnitsPerToken": 0.1, "outputUnitsPerToken": 0.2}`
	entry := func(old, new string) string {
		return `{"models": [` + ok + `, ` + strings.Replace(ok, old, new, 1) + `]}`
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"string price", entry(`"inputUnitsPerToken": 0.1`, `"inputUnitsPerToken": "0.1"`), "models[1].inputUnitsPerToken: must be a JSON number, not a string"},
		{"negative price", entry(`0.2`, `-0.2`), "models[1].outputUnitsPerToken: "},
		{"null price", entry(`0.2`, `null`), "models[1].outputUnitsPerToken: "},
		{"missing price", entry(`, "outputUnitsPerToken": 0.2`, ``), "models[1].outputUnitsPerToken: required"},
		{"maxTokens 0", entry(`10`, `0`), "models[1].maxTokens: must be at least 1"},
		{"maxTokens fraction", entry(`10`, `1.5`), "models[1].maxTokens: "},
		{"duplicate name", entry(`10`, `20`), "models[1].name: duplicate model \"a/b\""},
		{"unknown field", entry(`"maxTokens"`, `"cost": 1, "maxTokens"`), "models[1].cost: unknown field"},
		{"field case matters", entry(`"maxTokens"`, `"MaxTokens"`), "models[1].MaxTokens: unknown field"},
		{"name without provider", entry(`a/b`, `gpt`), "models[1].name: "},
		{"name with empty part", entry(`a/b`, `a/`), "models[1].name: "},
		{"name with two slashes", entry(`a/b`, `a/b/c`), "models[1].name: "},
		{"name uppercase", entry(`a/b`, `A/b`), "models[1].name: "},
		{"entry not an object", `{"models": [` + ok + `, 3]}`, "models[1]: must be a JSON object"},
		{"empty list", `{"models": []}`, "models: must list at least one model"},
		{"no models", `{}`, "models: required"},
		{"unknown top-level field", `{"models": [` + ok + `], "extra": 1}`, "extra: unknown field"},
		{"trailing data", `{"models": [` + ok + `]} {}`, "catalog: must be a JSON object"},
		{"not JSON", `models:`, "catalog: must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			require.ErrorContains(t, err, tc.want)
			require.True(t, strings.HasPrefix(err.Error(), strings.SplitN(tc.want, ":", 2)[0]+":"), err.Error())
		})
	}
}

func TestFromEnv(t *testing.T) {
	c, err := FromEnv(func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, Builtin().List(), c.List())

	path := filepath.Join(t.TempDir(), "models.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"models": [{"name": "local/llama3", "maxTokens": 2048, "inputUnitsPerToken": 0, "outputUnitsPerToken": 0.5}]}`), 0o600))
	env := map[string]string{EnvCatalog: path}
	c, err = FromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	m, ok := c.Get("local/llama3")
	require.True(t, ok)
	require.Equal(t, int64(2), m.Units(0, 3))
	_, ok = c.Get("test/echo")
	require.False(t, ok)

	require.NoError(t, os.WriteFile(path, []byte(`{"models": []}`), 0o600))
	_, err = FromEnv(func(k string) string { return env[k] })
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "models: must list")

	env[EnvCatalog] = filepath.Join(t.TempDir(), "missing.json")
	_, err = FromEnv(func(k string) string { return env[k] })
	require.ErrorIs(t, err, os.ErrNotExist)
}
