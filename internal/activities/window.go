package activities

import (
	"context"
	"encoding/json"
	"sort"
	"sync"

	"github.com/maypok86/otter/v2"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/transcript"
)

// The model's window is the longest suffix of the conversation that fits
// the agent's context. Reading it back from the transcript every turn costs
// time that grows with the conversation, so each worker keeps, per task, the
// tail it last showed the model and extends it with the entries a call makes
// durable. Entries are immutable once final, so a tail never goes stale; a
// tail that does not reach the new entries (another worker ran the turns in
// between, or this one restarted) is dropped and the window is read from the
// transcript.
//
// Tails are kept per workflow run, not per task: after a Temporal reset the
// new run writes positions the replaced run wrote (perhaps on another
// worker), and a tail of the replaced run would show the model its
// entries. A run that continues as new reads its first window afresh.

// windowCacheBytes bounds the tails one worker keeps (their entries' JSON
// bytes): a full default window is about 450 KB, so some 300 busy tasks'
// tails, or many more short ones. otter evicts by recency and frequency.
const windowCacheBytes = 128 << 20

type tail struct {
	key     string
	from    int                // position of entries[0]
	entries []contract.Message // positions [from, from+len)
	sizes   []int              // JSON size of each entry
	// budget the tail was cut to: the entry before from did not fit with
	// the tail then, so with more entries after it, it does not fit now.
	budget int
}

func (t *tail) end() int { return t.from + len(t.entries) }

type windowCache struct {
	mu sync.Mutex // tails change in place: one call at a time
	c  *otter.Cache[string, *tail]
}

func (t *tail) weight() uint32 {
	n := 64
	for _, s := range t.sizes {
		n += s
	}
	return uint32(n)
}

func newWindowCache() *windowCache {
	return &windowCache{c: otter.Must(&otter.Options[string, *tail]{
		MaximumWeight: windowCacheBytes,
		Weigher:       func(_ string, t *tail) uint32 { return t.weight() },
	})}
}

// window returns the entries [first, end) that fit budget, using the cached
// tail extended by fresh (the entries this call made durable, by position)
// when it reaches them; ok is false when the caller must read the transcript.
func (c *windowCache) window(key string, fresh map[int]contract.Message, end, budget int) (int, []contract.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, found := c.c.GetIfPresent(key)
	if !found {
		return 0, nil, false
	}
	low := end
	for p := range fresh {
		low = min(low, p)
	}
	if t.end() < low || t.from > low {
		return 0, nil, false
	}
	// Drop what fresh replaces, then append fresh in order.
	cut := low - t.from
	t.entries, t.sizes = t.entries[:cut:cut], t.sizes[:cut:cut]
	positions := make([]int, 0, len(fresh))
	for p := range fresh {
		positions = append(positions, p)
	}
	sort.Ints(positions)
	for i, p := range positions {
		if p != low+i {
			return 0, nil, false // a gap: only the transcript knows
		}
		b, _ := json.Marshal(fresh[p])
		t.entries = append(t.entries, fresh[p])
		t.sizes = append(t.sizes, len(b))
	}
	if t.end() != end {
		return 0, nil, false
	}
	// The longest suffix within budget (a JSON array: brackets and commas).
	size, first := 2, len(t.entries)
	for first > 0 {
		add := t.sizes[first-1]
		if first < len(t.entries) {
			add++
		}
		if size+add > budget {
			break
		}
		size += add
		first--
	}
	if first == 0 && t.from > 0 && budget != t.budget {
		return 0, nil, false // another budget may reach past the tail
	}
	// Keep only what the next window can need.
	t.entries, t.sizes, t.from = t.entries[first:], t.sizes[first:], t.from+first
	c.c.Set(key, t) // weighed again: the tail changed
	return t.from, append([]contract.Message(nil), t.entries...), true
}

// remember stores the window last shown under key.
func (c *windowCache) remember(key string, from int, entries []contract.Message, budget int) {
	t := &tail{key: key, from: from, entries: append([]contract.Message(nil), entries...), budget: budget}
	for _, m := range entries {
		b, _ := json.Marshal(m)
		t.sizes = append(t.sizes, len(b))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Set(key, t)
}

// forget drops the tail of key: the entries it was extended with were not
// stored (the call's writes failed), so the next call reads the store.
func (c *windowCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Invalidate(key)
}

// tailKey names the tail of transcript k as the run of the activity under
// ctx shows it (outside any run: k's alone).
func tailKey(ctx context.Context, k TranscriptKey) string {
	return k.ID() + "\x00" + transcript.WriterOf(ctx).Run
}

// window reads the model's window: from the cache when it can, else from the transcript.
func (a *Activities) window(ctx context.Context, k TranscriptKey, fresh map[int]contract.Message, end, budget int, durable func() error) (int, []contract.Message, error) {
	a.once.Do(func() { a.windows, a.starts = newWindowCache(), newStartMemory() })
	key := tailKey(ctx, k)
	if from, w, ok := a.windows.window(key, fresh, end, budget); ok {
		return from, w, nil
	}
	if err := durable(); err != nil { // the store is read: what it holds first
		return 0, nil, err
	}
	from, w, err := a.Transcript.Window(ctx, k, end, budget)
	if err != nil {
		return 0, nil, err
	}
	a.windows.remember(key, from, w, budget)
	return from, w, nil
}
