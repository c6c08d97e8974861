package activities

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// The usage results carry is contract.Usage with units beside it: its JSON
// is the same, byte for byte, as that of the flat struct it replaced (the
// strings below were encoded by it), so workers of either build read each
// other's results, stored answers and ledgers.
func TestAUsageEncodesAsTheFlatStructItReplacedDid(t *testing.T) {
	usage := Usage{Usage: contract.Usage{InputTokens: 120, OutputTokens: 30, CacheReadTokens: 100, CacheWriteTokens: 7}, Units: 3}
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"a model turn's result", ModelTurnResult{StopReason: "end", Model: "m", Usage: usage, Calls: 2, WindowFrom: 4, Offered: []string{"save"}},
			`{"output":{"message":[]},"stop_reason":"end","model":"m","usage":{"inputTokens":120,"outputTokens":30,"cacheReadTokens":100,"cacheWriteTokens":7,"units":3},"calls":2,"window_from":4,"offered":["save"]}`},
		{"no cache, no units", ModelTurnResult{Usage: Usage{Usage: contract.Usage{InputTokens: 1, OutputTokens: 2}}, Offered: []string{}},
			`{"output":{"message":[]},"stop_reason":"","model":"","usage":{"inputTokens":1,"outputTokens":2},"calls":0,"window_from":0,"offered":[]}`},
		{"a shaping result", ShapeResult{Raw: "{}", Usage: Usage{Usage: contract.Usage{InputTokens: 5, OutputTokens: 6, CacheReadTokens: 2}, Units: 1}},
			`{"object":null,"raw":"{}","usage":{"inputTokens":5,"outputTokens":6,"cacheReadTokens":2,"units":1}}`},
		{"a failure's spending", SpentOnFailure{Spent: &Usage{Usage: contract.Usage{InputTokens: 396, OutputTokens: 12}, Units: 3}},
			`{"spent_on_failure":{"inputTokens":396,"outputTokens":12,"units":3}}`},
		{"a streamed answer", streamedAnswer{StopReason: "end", Model: "m", Usage: Usage{Usage: contract.Usage{InputTokens: 9, OutputTokens: 8, CacheWriteTokens: 1}}, Calls: 1},
			`{"output":{"message":[]},"stop_reason":"end","model":"m","usage":{"inputTokens":9,"outputTokens":8,"cacheWriteTokens":1},"calls":1}`},
		{"a ledger record", spendRecord{Usage: Usage{Usage: contract.Usage{InputTokens: 9, OutputTokens: 8}, Units: 4}},
			`{"used":{"units":0,"inputTokens":0,"outputTokens":0},"usage":{"inputTokens":9,"outputTokens":8,"units":4},"in_flight":{"units":0,"inputTokens":0,"outputTokens":0}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.v)
			require.NoError(t, err)
			require.Equal(t, c.want, string(b))
		})
	}
	var back Usage
	require.NoError(t, json.Unmarshal([]byte(`{"inputTokens":120,"outputTokens":30,"cacheReadTokens":100,"cacheWriteTokens":7,"units":3}`), &back))
	require.Equal(t, usage, back, "the flat JSON decodes into the embedded struct")
}
