package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/agenttask/agenttask/contract"
)

// Write stores entries at positions first, first+1, ... . Rewriting an entry
// that is already stored (activity retries, a cancelled turn re-sent) succeeds.
// A different entry at a stored position replaces it when an earlier run
// wrote it (one a reset replaced) or its writer is unknown; otherwise it
// fails with a *PositionError wrapping ErrConflict (the writer's own run
// wrote it, or the writer has no run) or ErrSuperseded (a later run wrote
// it). Neither is fixed by retrying.
func (s *Store) Write(ctx context.Context, k Key, first int, entries []contract.Message) error {
	if first < 0 {
		return fmt.Errorf("transcript %s: negative position %d", k, first)
	}
	// A continuation started by an earlier release recorded nothing in
	// the transcript it continues: its first write here does.
	if err := s.recordOnce(ctx, k); err != nil {
		return err
	}
	return forEach(ctx, len(entries), func(ctx context.Context, i int) error {
		return s.writeOne(ctx, k, first+i, entries[i])
	})
}

func (s *Store) writeOne(ctx context.Context, k Key, pos int, m contract.Message) error {
	if pos < k.From {
		return fmt.Errorf("transcript %s: position %d belongs to the transcript this one continues (its own entries start at %d): never written here", k, pos, k.From)
	}
	key, err := k.entryKey(pos)
	if err != nil {
		return err
	}
	content, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("transcript %s: position %d: %w", k, pos, err)
	}
	w := WriterOf(ctx)
	if it, ok := s.cache.item(key, w.Run); ok {
		if old, _ := unstamp(it.val); sameJSON(old, content) {
			return nil // written before, by this call's run or one it continues
		}
		// Different: what storage holds now decides, not a cached copy.
	}
	data := stamp(content, m, w)
	err = s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json", IfNotExist: true})
	if err == nil {
		s.cache.stored(key, data, w.Run)
		return nil
	}
	if gcerrors.Code(err) != gcerrors.FailedPrecondition {
		return fmt.Errorf("transcript %s: write position %d: %w", k, pos, err)
	}
	// Written before, by an earlier attempt, another worker or another run.
	raw, err := s.b.ReadAll(ctx, key)
	if err != nil {
		return fmt.Errorf("transcript %s: read back position %d: %w", k, pos, err)
	}
	old, by := unstamp(raw)
	if sameJSON(old, content) {
		s.cache.stored(key, raw, w.Run)
		return nil
	}
	switch decide(by, w) {
	case replace:
		// A run a reset replaced wrote it: this run's entry takes its place.
		// (Blob stores cannot replace on a condition, so a writer of an
		// earlier run racing this one in the same instant could still win.)
		if err := s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
			return fmt.Errorf("transcript %s: replace position %d: %w", k, pos, err)
		}
		s.cache.stored(key, data, w.Run)
		return nil
	case superseded:
		s.cache.stored(key, raw, w.Run)
		return &PositionError{Key: k, Position: pos, Err: ErrSuperseded}
	default:
		s.cache.stored(key, raw, w.Run)
		return &PositionError{Key: k, Position: pos, Err: ErrConflict}
	}
}

// sameJSON compares encoded entries; the byte comparison settles nearly every
// case since Message encodes canonically.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	return decodeNumbers(a, &va) == nil && decodeNumbers(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

func decodeNumbers(data []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}
