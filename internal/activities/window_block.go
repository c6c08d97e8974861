package activities

import (
	"encoding/json"

	"github.com/maypok86/otter/v2"

	"github.com/agenttask/agenttask/contract"
)

// The window's start stays fixed while the conversation fits after it, so
// that every request repeats the previous one's bytes up to its new
// entries and a provider's prompt cache serves them (cache-stable
// requests). When the conversation no longer fits, the window does not
// drop one entry per turn (which would change the request's start every
// turn, and every turn would be billed whole): it drops a block at once,
// moving its start so what is left fills at most windowRefill of the
// budget, and keeps that start for the turns that fill the rest.
//
// The start a call used comes back to the workflow (ModelTurnResult
// WindowFrom), which hands it to the next call (ModelTurnInput WindowFrom,
// rules version 12), so it holds across workers and continue-as-new. For a
// call without one (older rules), the worker's own memory of the task's
// last start stands in.

// windowRefill is the share of the budget a moved window starts with: the
// block dropped is at least a quarter of the budget.
const windowRefillNum, windowRefillDen = 3, 4

// stableStart moves the window [from, end) (from is where the longest
// suffix within budget begins, window its entries) to the fixed start
// hint when the conversation from hint still fits, or, past it, to the
// first start at which what is left fills at most windowRefill of the
// budget (never past the newest entry).
func stableStart(from int, window []contract.Message, hint, budget int) (int, []contract.Message) {
	if len(window) == 0 {
		return from, window
	}
	if hint >= from && hint < from+len(window) {
		return hint, window[hint-from:] // the start holds
	}
	if from == 0 {
		return 0, window // everything fits: nothing to drop
	}
	// Past the fixed start (or none known): drop a block.
	size := 2 // the JSON array's brackets, as the window counts
	sizes := make([]int, len(window))
	for i, m := range window {
		b, _ := json.Marshal(m)
		sizes[i] = len(b) + 1 // and its comma
		size += sizes[i]
	}
	limit := budget * windowRefillNum / windowRefillDen
	i := 0
	for i < len(window)-1 && size > limit {
		size -= sizes[i]
		i++
	}
	return from + i, window[i:]
}

// startMemory is each worker's memory of a task's last window start, for
// calls that bring none.
type startMemory struct {
	c *otter.Cache[string, int]
}

func newStartMemory() startMemory {
	return startMemory{c: otter.Must(&otter.Options[string, int]{MaximumSize: prefixCacheEntries})}
}

func (s startMemory) get(key string) int {
	v, _ := s.c.GetIfPresent(key)
	return v
}

func (s startMemory) set(key string, from int) { s.c.Set(key, from) }
