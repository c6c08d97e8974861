package transcript

import (
	"container/list"
	"sync"
	"sync/atomic"

	"github.com/agenttask/agenttask/schema"
)

// Cache bounds. Entries are immutable once written, so a cached copy never
// goes stale; the bounds only cap memory.
const (
	cacheEntries  = 4096
	cacheBytes    = 64 << 20
	cacheMaxEntry = cacheBytes / 64 // huge entries would evict everything else
)

// lru holds encoded entries by blob key. Values are never mutated, so they
// are shared without copying.
type lru struct {
	mu    sync.Mutex
	ll    *list.List // front = most recent
	items map[string]*list.Element
	bytes int
}

type lruItem struct {
	key string
	val []byte
	// msg memoises the decoded entry: decoding dominates a cached read, and
	// the model's window is read again every turn.
	msg atomic.Pointer[schema.Message]
}

// decoded returns the memoised decoded entry of key, if any.
func (c *lru) decoded(key string) (*schema.Message, bool) {
	c.mu.Lock()
	e, ok := c.items[key]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	m := e.Value.(*lruItem).msg.Load()
	return m, m != nil
}

// setDecoded memoises the decoded entry of key when key is cached.
func (c *lru) setDecoded(key string, m *schema.Message) {
	c.mu.Lock()
	e, ok := c.items[key]
	c.mu.Unlock()
	if ok {
		e.Value.(*lruItem).msg.Store(m)
	}
}

func newLRU() *lru { return &lru{ll: list.New(), items: map[string]*list.Element{}} }

func (c *lru) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*lruItem).val, true
	}
	return nil, false
}

func (c *lru) add(key string, val []byte) {
	if len(val) > cacheMaxEntry {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.ll.MoveToFront(e)
		return
	}
	c.items[key] = c.ll.PushFront(&lruItem{key: key, val: val})
	c.bytes += len(val)
	for c.ll.Len() > cacheEntries || c.bytes > cacheBytes {
		old := c.ll.Remove(c.ll.Back()).(*lruItem)
		delete(c.items, old.key)
		c.bytes -= len(old.val)
	}
}
