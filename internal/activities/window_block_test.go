package activities

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
)

// entries of n bytes of JSON each (about).
func sizedEntries(n, size int) []contract.Message {
	out := make([]contract.Message, n)
	for i := range out {
		out[i] = contract.Message{Type: contract.TypeInput, TaskIO: contract.TaskIO{Message: contract.TextParts(strings.Repeat("x", size))}}
	}
	return out
}

func jsonSize(ms []contract.Message) int {
	b, _ := json.Marshal(ms)
	return len(b)
}

// The window keeps its start while the conversation after it fits; past
// that it drops a block, to three quarters of the budget, not one entry.
func TestStableStartDropsABlockThenHolds(t *testing.T) {
	all := sizedEntries(100, 100)
	one := jsonSize(all[:1]) + 1
	budget := 40 * one             // 40 entries fit
	longest := func(end int) int { // the longest suffix within budget, as the window reads it
		from := end
		for from > 0 && jsonSize(all[from-1:end]) <= budget {
			from--
		}
		return from
	}
	// Everything fits: the start is 0.
	from, w := stableStart(0, all[:30], 0, budget)
	require.Equal(t, 0, from)
	require.Len(t, w, 30)

	// Turn by turn from 30 to 100 entries, each call handed the last start.
	start, moves := 0, 0
	for end := 31; end <= 100; end++ {
		f := longest(end)
		next, w := stableStart(f, all[f:end], start, budget)
		require.LessOrEqual(t, jsonSize(w), budget, "end %d", end)
		require.Equal(t, end-next, len(w))
		if next != start {
			moves++
			require.GreaterOrEqual(t, next-start, 10, "a move drops a quarter of the budget or more (end %d)", end)
			require.LessOrEqual(t, jsonSize(w), budget*3/4, "and leaves room for many turns")
		}
		start = next
	}
	require.Equal(t, 6, moves, "70 turns over a 40-entry window: six moves, not 60")

	// The newest entry always stays, even when it alone fills the budget.
	from, w = stableStart(99, all[99:], 0, one)
	require.Equal(t, 99, from)
	require.Len(t, w, 1)
}

// A request shares with the previous one the parts that are equal from the start.
func TestPrefixSharedParts(t *testing.T) {
	req := func(msgs ...string) llm.Request {
		r := llm.Request{Model: "test/echo", Tools: []llm.Tool{{Name: "t"}}}
		for _, m := range msgs {
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleUser, Content: m})
		}
		return r
	}
	a := partsOf(req("sys", "one", "two"))
	b := partsOf(req("sys", "one", "two", "three"))
	require.Equal(t, a.total(), b.shared(a), "the whole previous request is b's prefix")
	require.Equal(t, b.total()-a.total(), len("user")+len("three"))
	c := partsOf(req("sys", "ONE", "two", "three"))
	require.Equal(t, b.sizes[0]+b.sizes[1], c.shared(b), "shared up to the part that changed")
	d := partsOf(llm.Request{Model: "test/echo", Tools: []llm.Tool{{Name: "other"}}, Messages: req("sys").Messages})
	require.Zero(t, d.shared(a), "other tools: nothing shared")
}
