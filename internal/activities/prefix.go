package activities

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"sync"

	"github.com/maypok86/otter/v2"

	"github.com/agenttask/agenttask/internal/llm"
)

// Providers bill a cached prompt prefix at a fraction of the input price,
// but only a byte-identical one. Each request a task sends is measured
// against the task's previous request: how many of its bytes, from the
// start, are the same. A request is read as its parts in the order a
// provider reads them (the tools, then each message), each encoded as JSON;
// the shared prefix is the parts that are equal from the first on, so it
// is measured at the granularity of whole parts (a part that changes counts
// as not shared from its start). Each worker keeps a 64-bit digest and a
// size per part of the last request of each task (16 bytes a part).

// PrefixMetrics, when the activities' Metrics has it, records each
// request's shared prefix (telemetry.Metrics does).
type PrefixMetrics interface {
	RequestPrefix(model string, shared, total int64)
}

// prefixCacheEntries bounds the tasks whose last request a worker keeps.
const prefixCacheEntries = 100_000

type requestParts struct {
	digests []uint64
	sizes   []int
}

// partSeed seeds the parts' digests: one per worker, as the cache is.
var partSeed = maphash.MakeSeed()

// part digests strings, counting their bytes.
type part struct {
	h maphash.Hash
	n int
}

func (p *part) add(ss ...string) {
	for _, s := range ss {
		p.h.WriteString(s)
		p.h.WriteByte(0)
		p.n += len(s)
	}
}

// partsOf reads req as the provider does: its tools (and the answer's
// schema) first, then its messages. A tool's or a schema's bytes are its
// JSON; a message's are its texts, URLs and calls.
func partsOf(req llm.Request) requestParts {
	var p requestParts
	head := part{}
	head.h.SetSeed(partSeed)
	head.add(req.Model)
	b, _ := json.Marshal(struct {
		Tools  []llm.Tool `json:"tools"`
		Schema any        `json:"schema,omitempty"`
	}{req.Tools, req.JSONSchema})
	head.add(string(b))
	p.digests, p.sizes = append(p.digests, head.h.Sum64()), append(p.sizes, head.n)
	for _, m := range req.Messages {
		d := part{}
		d.h.SetSeed(partSeed)
		d.add(string(m.Role), m.Content, m.ToolCallID)
		for _, x := range m.Parts {
			d.add(x.Type, x.Text, x.ImageURL, x.FileName, x.FileData)
		}
		for _, tc := range m.ToolCalls {
			d.add(tc.ID, tc.Name, tc.Arguments)
		}
		p.digests, p.sizes = append(p.digests, d.h.Sum64()), append(p.sizes, d.n)
	}
	return p
}

func (p requestParts) total() int {
	n := 0
	for _, s := range p.sizes {
		n += s
	}
	return n
}

// shared is how many bytes of p, from the start, are the same as in prev.
func (p requestParts) shared(prev requestParts) int {
	n := 0
	for i := range p.digests {
		if i >= len(prev.digests) || p.digests[i] != prev.digests[i] {
			break
		}
		n += p.sizes[i]
	}
	return n
}

// prefixes keeps the last request of each task.
type prefixes struct {
	once sync.Once
	c    *otter.Cache[string, requestParts]
}

func (x *prefixes) cache() *otter.Cache[string, requestParts] {
	x.once.Do(func() {
		x.c = otter.Must(&otter.Options[string, requestParts]{MaximumSize: prefixCacheEntries})
	})
	return x.c
}

// prefixKey names the task of the requests a context's calls send.
type prefixKey struct{}

// prefixMeasure is one activity's measure: its last request's.
type prefixMeasure struct {
	key           string
	shared, total int
}

func withPrefixMeasure(ctx context.Context, key string) (context.Context, *prefixMeasure) {
	m := &prefixMeasure{key: key}
	return context.WithValue(ctx, prefixKey{}, m), m
}

// measurePrefix compares req with the task's previous request and keeps
// it as the next one's previous.
func (a *Activities) measurePrefix(ctx context.Context, req llm.Request) {
	m, _ := ctx.Value(prefixKey{}).(*prefixMeasure)
	if m == nil {
		return
	}
	parts := partsOf(req)
	c := a.prefixes.cache()
	shared := 0
	if prev, ok := c.GetIfPresent(m.key); ok {
		shared = parts.shared(prev)
	}
	c.Set(m.key, parts)
	m.shared, m.total = shared, parts.total()
	if pm, ok := a.Metrics.(PrefixMetrics); ok {
		pm.RequestPrefix(req.Model, int64(m.shared), int64(m.total))
	}
}
