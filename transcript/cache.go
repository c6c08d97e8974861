package transcript

import (
	"sync/atomic"

	"github.com/maypok86/otter/v2"

	"github.com/agenttask/agenttask/schema"
)

// Cache bounds. Entries are immutable once written, so a cached copy never
// goes stale; the bounds only cap memory. The cache weighs each entry by its
// encoded bytes, twice over (the decoded copy memoised beside them is of the
// same order).
const (
	cacheBytes    = 64 << 20
	cacheMaxEntry = cacheBytes / 64 // huge entries would evict everything else
)

// lru holds encoded entries by blob key in otter's weighted cache (a
// maintained W-TinyLFU cache: it evicts by recency and frequency within
// cacheBytes). Values are never mutated, so they are shared without copying.
type lru struct {
	c *otter.Cache[string, *lruItem]
}

type lruItem struct {
	val []byte
	// msg memoises the decoded entry: decoding dominates a cached read, and
	// the model's window is read again every turn.
	msg atomic.Pointer[schema.Message]
}

func newLRU() *lru {
	return &lru{c: otter.Must(&otter.Options[string, *lruItem]{
		MaximumWeight: cacheBytes,
		Weigher:       func(_ string, it *lruItem) uint32 { return uint32(2 * len(it.val)) },
	})}
}

// decoded returns the memoised decoded entry of key, if any.
func (c *lru) decoded(key string) (*schema.Message, bool) {
	it, ok := c.c.GetIfPresent(key)
	if !ok {
		return nil, false
	}
	m := it.msg.Load()
	return m, m != nil
}

// setDecoded memoises the decoded entry of key when key is cached.
func (c *lru) setDecoded(key string, m *schema.Message) {
	if it, ok := c.c.GetIfPresent(key); ok {
		it.msg.Store(m)
	}
}

func (c *lru) get(key string) ([]byte, bool) {
	it, ok := c.c.GetIfPresent(key)
	if !ok {
		return nil, false
	}
	return it.val, true
}

func (c *lru) add(key string, val []byte) {
	if len(val) > cacheMaxEntry {
		return
	}
	c.c.SetIfAbsent(key, &lruItem{val: val})
}
