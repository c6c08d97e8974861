package activities

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/transcript"
)

// storeTranscript adapts the transcript store for this package's tests.
type storeTranscript struct {
	s       *transcript.Store
	windows *int // counts reads of the window from storage
}

func tkey(k TranscriptKey) transcript.Key {
	return transcript.Key{TaskID: k.TaskID, FirstRunID: k.FirstRunID}
}
func (a storeTranscript) WriteAt(ctx context.Context, k TranscriptKey, pos int, m contract.Message) error {
	return a.s.Write(ctx, tkey(k), pos, []contract.Message{m})
}
func (a storeTranscript) PutPending(ctx context.Context, k TranscriptKey, pos, turn int, m contract.Message) (contract.Message, error) {
	return m, a.s.PutJSON(ctx, tkey(k), fmt.Sprintf("p-%d-%d", pos, turn), m)
}
func (a storeTranscript) GetPending(ctx context.Context, k TranscriptKey, pos, turn int) (contract.Message, error) {
	var m contract.Message
	return m, a.s.GetJSON(ctx, tkey(k), fmt.Sprintf("p-%d-%d", pos, turn), &m)
}
func (a storeTranscript) WriteLink(ctx context.Context, k TranscriptKey) error {
	return a.s.WriteLink(ctx, tkey(k))
}
func (a storeTranscript) PutOnce(ctx context.Context, k TranscriptKey, name string, v, stored any) (bool, error) {
	return a.s.PutOnce(ctx, tkey(k), name, v, stored)
}
func (a storeTranscript) GetOnce(ctx context.Context, k TranscriptKey, name string, v any) error {
	return a.s.GetOnce(ctx, tkey(k), name, v)
}
func (a storeTranscript) PutLatest(ctx context.Context, k TranscriptKey, name string, v any) error {
	return a.s.PutJSON(ctx, tkey(k), name, v)
}
func (a storeTranscript) GetLatest(ctx context.Context, k TranscriptKey, name string, v any) error {
	return a.s.GetJSON(ctx, tkey(k), name, v)
}
func (a storeTranscript) Window(ctx context.Context, k TranscriptKey, end, budget int) (int, []contract.Message, error) {
	if a.windows != nil {
		*a.windows++
	}
	return a.s.Window(ctx, tkey(k), end, budget)
}
func (a storeTranscript) Read(ctx context.Context, k TranscriptKey, from, to int) ([]contract.Message, error) {
	return a.s.Read(ctx, tkey(k), from, to)
}

// The cached window is exactly the window the transcript gives, turn after
// turn, whatever the entry sizes and the budget.
func TestCachedWindowEqualsTheTranscriptWindow(t *testing.T) {
	ctx := context.Background()
	store, err := transcript.Open(ctx, "mem://")
	require.NoError(t, err)
	reads := 0
	a := &Activities{Transcript: storeTranscript{store, &reads}}
	tr := storeTranscript{s: store}
	k := TranscriptKey{TaskID: "w", FirstRunID: "r"}
	rnd := rand.New(rand.NewSource(1))
	const budget = 5000
	pos := 0
	for turn := 1; turn <= 300; turn++ {
		fresh := map[int]contract.Message{}
		// Most turns add an output and an input; some add several inputs, some
		// skip the cache (a write the cache did not see: another worker).
		n := 1 + rnd.Intn(3)
		for i := 0; i < n; i++ {
			m := contract.Message{Type: contract.TypeInput, TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(strings.Repeat("x", rnd.Intn(900)))}, CommittedAt: "t"}}
			require.NoError(t, tr.WriteAt(ctx, k, pos, m))
			fresh[pos] = m
			pos++
		}
		if turn%37 == 0 {
			fresh = map[int]contract.Message{}
		}
		from, got, err := a.window(ctx, k, fresh, pos, budget, func() error { return nil })
		require.NoError(t, err)
		wantFrom, want, err := tr.Window(ctx, k, pos, budget)
		require.NoError(t, err)
		require.Equal(t, wantFrom, from, "turn %d", turn)
		require.Equal(t, want, got, "turn %d", turn)
	}
	require.Less(t, reads, 15, "the cache serves nearly every turn")
	t.Logf("%d of 300 windows read from storage", reads)
}

// The tails a worker keeps are bounded by their bytes.
func TestWindowCacheIsBoundedByBytes(t *testing.T) {
	c := newWindowCache()
	big := contract.Message{Type: contract.TypeInput, TaskIO: contract.TaskIO{Message: contract.TextParts(strings.Repeat("x", 90_000))}}
	entries := []contract.Message{big, big, big, big, big} // ~450 KB, a full default window
	for i := range 600 {                                   // ~270 MB of tails, twice the bound
		c.remember(TranscriptKey{TaskID: fmt.Sprint("t", i), FirstRunID: "r"}.ID(), 0, entries, 1<<20)
	}
	c.c.CleanUp()
	if w := c.c.WeightedSize(); w > windowCacheBytes {
		t.Fatalf("the cache weighs %d, more than %d", w, windowCacheBytes)
	}
	if n := c.c.EstimatedSize(); n == 0 || n >= 600 {
		t.Fatalf("%d tails kept of 600", n)
	}
}
