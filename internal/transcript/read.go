package transcript

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"gocloud.dev/gcerrors"

	"github.com/agenttask/agenttask/contract"
)

// Window reads backwards in chunks sized from the budget left, within these bounds.
const (
	windowMinChunk = 8
	windowMaxChunk = 256
)

// Read returns entries [from, to) in order. A missing position fails with a
// *PositionError wrapping ErrNotFound.
func (s *Store) Read(ctx context.Context, k Key, from, to int) ([]contract.Message, error) {
	if from < 0 || to < from {
		return nil, fmt.Errorf("transcript %s: bad range [%d, %d)", k, from, to)
	}
	items, err := s.readItems(ctx, k, from, to)
	if err != nil {
		return nil, err
	}
	return s.decode(ctx, k, from, items)
}

// Window returns the longest suffix of [0, end) that fits in budgetBytes when
// encoded as a JSON array (len(json.Marshal(entries)) <= budgetBytes), and the
// position of its first entry. If even the last entry does not fit, it returns
// first == end and no entries: the caller decides whether to truncate or fail.
// It reads backwards in chunks, so a missing position just before the window
// can fail the call.
func (s *Store) Window(ctx context.Context, k Key, end int, budgetBytes int) (first int, entries []contract.Message, err error) {
	if end < 0 {
		return 0, nil, fmt.Errorf("transcript %s: negative end %d", k, end)
	}
	size := len("[]")
	first = end
	var picked []*lruItem // newest first
	chunk := windowMinChunk
	for first > 0 {
		lo := max(0, first-chunk)
		items, err := s.readItems(ctx, k, lo, first)
		if err != nil {
			return 0, nil, err
		}
		for i := len(items) - 1; i >= 0; i-- {
			add := items[i].size
			if first < end {
				add++ // the comma
			}
			if size+add > budgetBytes {
				slices.Reverse(picked)
				entries, err = s.decode(ctx, k, first, picked)
				return first, entries, err
			}
			size += add
			first--
			picked = append(picked, items[i])
		}
		// Read about as many entries as the remaining budget holds at the average size so far.
		avg := (size - 2) / (end - first)
		chunk = min(max((budgetBytes-size)/(avg+1)+1, windowMinChunk), windowMaxChunk)
	}
	slices.Reverse(picked)
	entries, err = s.decode(ctx, k, first, picked)
	return first, entries, err
}

func (s *Store) readItems(ctx context.Context, k Key, from, to int) ([]*lruItem, error) {
	out := make([]*lruItem, to-from)
	err := forEach(ctx, len(out), func(ctx context.Context, i int) error {
		var err error
		out[i], err = s.readOne(ctx, k, from+i)
		return err
	})
	return out, err
}

func (s *Store) readOne(ctx context.Context, k Key, pos int) (*lruItem, error) {
	key, err := s.entryBlob(ctx, k, pos)
	if err != nil {
		return nil, err
	}
	run := WriterOf(ctx).Run
	if it, ok := s.cache.item(key, run); ok {
		return it, nil
	}
	data, err := s.b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, &PositionError{Key: k, Position: pos, Err: ErrNotFound}
	}
	if err != nil {
		return nil, fmt.Errorf("transcript %s: read position %d: %w", k, pos, err)
	}
	return s.cache.stored(key, data, run), nil
}

// decode spreads decoding over the workers too: for cached entries it is
// the whole cost of a read.
// Decoded entries are memoised on their items; a returned message shares
// its parts and values with the memo, so callers must not mutate them. (The
// writer's member, inside the first part, is not a ContentPart field: it
// is not decoded.)
func (s *Store) decode(ctx context.Context, k Key, from int, items []*lruItem) ([]contract.Message, error) {
	out := make([]contract.Message, len(items))
	err := forEach(ctx, len(items), func(ctx context.Context, i int) error {
		it := items[i]
		if m := it.msg.Load(); m != nil {
			out[i] = *m
			return nil
		}
		if err := json.Unmarshal(it.val, &out[i]); err != nil {
			return fmt.Errorf("transcript %s: position %d: %w", k, from+i, err)
		}
		m := out[i]
		it.msg.Store(&m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
