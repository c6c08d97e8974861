package workerkit

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/workflows"
)

// Defaults of QueryReader.
const (
	// QueryReadWait is how long a `messages` query waits, under the
	// workflow's lock, for entries of earlier runs being loaded from
	// storage before it answers MESSAGES_LOADING.
	QueryReadWait = 300 * time.Millisecond
	// queryKeepLoad keeps a finished load's entries reachable for a retried
	// query even when the cache declined them (its admission policy may
	// refuse a newcomer into a full cache).
	queryKeepLoad = time.Minute
	// queryCacheBytes bounds the entries the reader keeps, by encoded size.
	queryCacheBytes = 32 << 20
)

// QueryReader is the `messages` query's reader of entries that earlier runs
// left in the transcript. The query runs under the SDK's per-workflow lock,
// so a slow store must not hold it: the reader serves from memory (entries
// are immutable once written, so a cached entry never goes stale), and
// otherwise loads in a goroutine of its own, with the full read timeout,
// and waits for that load at most Wait. Past the bound Read returns an error
// wrapping workflows.ErrTranscriptLoading (the query answers
// MESSAGES_LOADING) while the load goes on and fills the cache, so the
// retried query is served from memory. Concurrent reads of one range share
// one load. It issues no workflow commands: its only effect is on the
// worker's memory.
type QueryReader struct {
	inner   workflows.TranscriptReader
	wait    time.Duration
	timeout time.Duration
	keep    time.Duration
	cache   *otter.Cache[entryKey, cachedEntry]

	mu    sync.Mutex
	loads map[rangeKey]*load
}

// entryKey names one entry: its transcript (the key as JSON, parent link
// included) and its position.
type entryKey struct {
	transcript string
	pos        int
}

type rangeKey struct {
	transcript string
	from, to   int
}

type cachedEntry struct {
	msg    contract.Message
	weight uint32
}

// load is one background read of a range; done closes when msgs or err is set.
type load struct {
	started time.Time
	done    chan struct{}
	msgs    []contract.Message
	err     error
}

var _ workflows.TranscriptReader = (*QueryReader)(nil)

// NewQueryReader wraps inner (the transcript store) with the defaults: a
// query waits QueryReadWait, a load takes at most
// workflows.TranscriptReadTimeout.
func NewQueryReader(inner workflows.TranscriptReader) *QueryReader {
	return newQueryReader(inner, QueryReadWait, workflows.TranscriptReadTimeout, queryKeepLoad)
}

func newQueryReader(inner workflows.TranscriptReader, wait, timeout, keep time.Duration) *QueryReader {
	return &QueryReader{
		inner: inner, wait: wait, timeout: timeout, keep: keep,
		cache: otter.Must(&otter.Options[entryKey, cachedEntry]{
			MaximumWeight: queryCacheBytes,
			Weigher:       func(_ entryKey, e cachedEntry) uint32 { return e.weight },
		}),
		loads: map[rangeKey]*load{},
	}
}

// Read returns entries [from, to) of the transcript k: from memory, or from
// a background load that finishes within the wait bound (or ctx, if
// sooner); otherwise an error wrapping workflows.ErrTranscriptLoading.
func (r *QueryReader) Read(ctx context.Context, k activities.TranscriptKey, from, to int) ([]contract.Message, error) {
	if from < 0 || to < from {
		return nil, fmt.Errorf("bad range [%d, %d)", from, to)
	}
	name, err := json.Marshal(k)
	if err != nil {
		return nil, err
	}
	rk := rangeKey{transcript: string(name), from: from, to: to}
	if ms, ok := r.cached(rk); ok {
		return ms, nil
	}
	r.mu.Lock()
	l := r.loads[rk]
	if l == nil {
		l = &load{started: time.Now(), done: make(chan struct{})}
		r.loads[rk] = l
		go r.load(rk, l, k)
	}
	r.mu.Unlock()
	// The bound counts from the load's start: a retried query finds the
	// load under way and holds the workflow's lock no longer than the
	// first one did, so retries in a row never starve its updates.
	wait := r.wait - time.Since(l.started)
	if wait <= 0 {
		select {
		case <-l.done:
			return l.msgs, l.err
		default:
			return nil, fmt.Errorf("entries %d-%d: %w (loading for %s; the load goes on)", from, to-1, workflows.ErrTranscriptLoading, time.Since(l.started).Round(time.Millisecond))
		}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-l.done:
		return l.msgs, l.err
	case <-timer.C:
		return nil, fmt.Errorf("entries %d-%d: %w (waited %s; the load goes on)", from, to-1, workflows.ErrTranscriptLoading, r.wait)
	case <-ctx.Done():
		return nil, fmt.Errorf("entries %d-%d: %w (%v)", from, to-1, workflows.ErrTranscriptLoading, ctx.Err())
	}
}

// cached returns the range when every entry of it is in memory.
func (r *QueryReader) cached(rk rangeKey) ([]contract.Message, bool) {
	out := make([]contract.Message, 0, rk.to-rk.from)
	for p := rk.from; p < rk.to; p++ {
		e, ok := r.cache.GetIfPresent(entryKey{rk.transcript, p})
		if !ok {
			return nil, false
		}
		out = append(out, e.msg)
	}
	return out, true
}

// load reads the range with a context of its own (not the query's, which
// ends when the query stops waiting) and caches what it read. A failed load
// is forgotten at once, so the next query tries again; a finished one stays
// reachable for keep.
func (r *QueryReader) load(rk rangeKey, l *load, k activities.TranscriptKey) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	msgs, err := r.inner.Read(ctx, k, rk.from, rk.to)
	if err == nil && len(msgs) != rk.to-rk.from {
		msgs, err = nil, fmt.Errorf("the store returned %d entries for [%d, %d)", len(msgs), rk.from, rk.to)
	}
	if err == nil {
		for i, m := range msgs {
			b, _ := json.Marshal(m)
			r.cache.Set(entryKey{rk.transcript, rk.from + i}, cachedEntry{msg: m, weight: uint32(2 * len(b))})
		}
	}
	l.msgs, l.err = msgs, err
	close(l.done)
	forget := func() {
		r.mu.Lock()
		if r.loads[rk] == l {
			delete(r.loads, rk)
		}
		r.mu.Unlock()
	}
	if err != nil || r.keep <= 0 {
		forget()
		return
	}
	time.AfterFunc(r.keep, forget)
}
