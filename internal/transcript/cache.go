package transcript

import (
	"bytes"
	"sync/atomic"

	"github.com/maypok86/otter/v2"

	"github.com/agenttask/agenttask/contract"
)

// Cache bounds; they only cap memory. The cache weighs each entry by its
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

// lruItem is one object as stored.
//
// Objects change only when a run that replaced another (a Temporal reset)
// writes where the replaced run wrote, which another worker may do: so an
// item serves a reader of a workflow run (an activity) only when that run
// wrote it or read it from storage itself (seen). While a run is open no
// other run writes, so what it saw stays true for it; a run that starts
// after a reset reads each object once from storage. Readers outside any
// run (queries, tools) take the item as it is.
type lruItem struct {
	val    []byte // as stored, the writer's member included
	size   int    // bytes of the value without the writer's member: what a window counts
	writer Writer
	// msg memoises the decoded entry: decoding dominates a cached read, and
	// the model's window is read again every turn.
	msg  atomic.Pointer[contract.Message]
	seen atomic.Pointer[[]string] // runs other than the writer's that read it from storage
}

// maxSeen bounds the runs an item remembers (a run's successors after
// continue-as-new read its entries too; older ones read again).
const maxSeen = 4

func newItem(val []byte) *lruItem {
	content, w := unstamp(val)
	return &lruItem{val: val, size: len(content), writer: w}
}

// servesRun reports whether the item holds what the reader of run sees:
// it is that run's own, that run read it, or the reader is outside any run.
func (it *lruItem) servesRun(run string) bool {
	if run == "" || it.writer.Run == run {
		return true
	}
	if seen := it.seen.Load(); seen != nil {
		for _, r := range *seen {
			if r == run {
				return true
			}
		}
	}
	return false
}

// sawRun records that run read the item from storage.
func (it *lruItem) sawRun(run string) {
	for run != "" && !it.servesRun(run) {
		old := it.seen.Load()
		var next []string
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, run)
		if len(next) > maxSeen {
			next = next[len(next)-maxSeen:]
		}
		if it.seen.CompareAndSwap(old, &next) {
			return
		}
	}
}

func newLRU() *lru {
	return &lru{c: otter.Must(&otter.Options[string, *lruItem]{
		MaximumWeight: cacheBytes,
		Weigher:       func(_ string, it *lruItem) uint32 { return uint32(2 * len(it.val)) },
	})}
}

// item returns the cached item of key when it serves a reader of run.
func (c *lru) item(key, run string) (*lruItem, bool) {
	it, ok := c.c.GetIfPresent(key)
	if !ok || !it.servesRun(run) {
		return nil, false
	}
	return it, true
}

// stored records val as what storage holds at key, read or written by a
// call of run, and returns its item: the cached one when it holds the same
// bytes (its memo kept), else a new one that replaces it (an object too
// large to cache is returned all the same).
func (c *lru) stored(key string, val []byte, run string) *lruItem {
	if it, ok := c.c.GetIfPresent(key); ok && bytes.Equal(it.val, val) {
		it.sawRun(run)
		return it
	}
	it := newItem(val)
	it.sawRun(run)
	if len(val) <= cacheMaxEntry {
		c.c.Set(key, it)
	} else {
		c.c.Invalidate(key)
	}
	return it
}

// get and add are the plain forms, for objects that never change (links)
// and tests.
func (c *lru) get(key string) ([]byte, bool) {
	it, ok := c.item(key, "")
	if !ok {
		return nil, false
	}
	return it.val, true
}

func (c *lru) add(key string, val []byte) { c.stored(key, val, "") }
