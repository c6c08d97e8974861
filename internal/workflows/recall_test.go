package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// recall (already_collected) shows the last recallValues (12) collected
// values, oldest first, each cut at recallChars (120) characters, not
// bytes, ending in …; a list as its length and first item; secrets masked
// before the cut.
func TestRecallShowsTheLastTwelveValuesCutAt120Characters(t *testing.T) {
	require.Equal(t, 12, recallValues, "the contract's limit (docs/contract.md)")
	require.Equal(t, 120, recallChars, "the contract's limit (docs/contract.md)")
	raw := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	var cs []contract.Collected
	for k := 1; k <= 9; k++ {
		cs = append(cs, contract.Collected{Name: fmt.Sprintf("v%02d", k), Value: raw(fmt.Sprintf("value %02d", k))})
	}
	cs = append(cs,
		contract.Collected{Name: "exact", Value: raw(strings.Repeat("é", 120))},                  // 120 characters, 240 bytes
		contract.Collected{Name: "over", Value: raw(strings.Repeat("x", 121))},                   // one character too many
		contract.Collected{Name: "list", Value: raw([]string{"first", "second"})},                // shown as its length and first item
		contract.Collected{Name: "object", Value: json.RawMessage(`{"a":1}`)},                    // JSON text
		contract.Collected{Name: "masked", Value: raw("key s3cr3t " + strings.Repeat("y", 200))}, // masked, then cut
	)
	saved := &collectedRecord{Collected: cs}
	sec := secrets{names: []string{"k"}, values: map[string]json.RawMessage{"k": raw("s3cr3t")}}
	got := saved.recall(sec)

	var names []string
	for _, r := range got {
		names = append(names, r.Name)
		require.LessOrEqual(t, len([]rune(r.Value)), 120, r.Name)
	}
	require.Equal(t, []string{"v03", "v04", "v05", "v06", "v07", "v08", "v09", "exact", "over", "list", "object", "masked"}, names,
		"the last 12 of 14, oldest first")
	by := map[string]string{}
	for _, r := range got {
		by[r.Name] = r.Value
	}
	require.Equal(t, "value 03", by["v03"])
	require.Equal(t, strings.Repeat("é", 120), by["exact"], "120 characters are whole")
	require.Equal(t, strings.Repeat("x", 119)+"…", by["over"])
	require.Equal(t, "2 items; first: first", by["list"])
	require.Equal(t, `{"a":1}`, by["object"])
	require.Equal(t, "key [secret] "+strings.Repeat("y", 119-len("key [secret] "))+"…", by["masked"])

	// 12 or fewer: all of them.
	saved.Collected = cs[len(cs)-12:]
	require.Len(t, saved.recall(sec), 12)
	saved.Collected = cs[:1]
	require.Equal(t, []activities.Recalled{{Name: "v01", Value: "value 01"}}, saved.recall(sec))
	saved.Collected = nil
	require.Empty(t, saved.recall(sec))
}
