package transcript

import (
	"context"
	"encoding/json"
	"fmt"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// PutJSON stores v as JSON under name, replacing any earlier value. Used to
// carry large state across continue-as-new by reference.
func (s *Store) PutJSON(ctx context.Context, k Key, name string, v any) error {
	key, err := k.stashKey(name)
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	if err := s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	return nil
}

// GetJSON decodes the value stored under name into v; a missing name fails
// with an error wrapping ErrNotFound.
func (s *Store) GetJSON(ctx context.Context, k Key, name string, v any) error {
	key, err := k.stashKey(name)
	if err != nil {
		return err
	}
	data, err := s.b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("transcript %s: stash %q: %w", k, name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	return nil
}

// PutOnce stores v under name unless a value is stored there already, in
// which case it decodes the stored value into stored and reports true: a
// retried or repeated writer adopts the first value instead of replacing it.
// Under PerRun, a value an earlier run stored (or one whose writer is
// unknown) is replaced rather than adopted (see PerRun).
func (s *Store) PutOnce(ctx context.Context, k Key, name string, v, stored any) (bool, error) {
	key, err := k.stashKey(name)
	if err != nil {
		return false, err
	}
	content, err := json.Marshal(v)
	if err != nil {
		return false, fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	w := WriterOf(ctx)
	perRun := isPerRun(ctx) && w.Run != ""
	data := content
	if perRun {
		data = stamp(content, v, w)
	}
	err = s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json", IfNotExist: true})
	if err == nil {
		s.cache.stored(key, data, w.Run)
		return false, nil
	}
	if gcerrors.Code(err) != gcerrors.FailedPrecondition {
		return false, fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	if !perRun {
		return true, s.GetOnce(ctx, k, name, stored)
	}
	raw, err := s.b.ReadAll(ctx, key)
	if err != nil {
		return false, fmt.Errorf("transcript %s: stash %q: read back: %w", k, name, err)
	}
	if old, by := unstamp(raw); !sameJSON(old, content) && decide(by, w) == replace {
		if err := s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
			return false, fmt.Errorf("transcript %s: stash %q: replace: %w", k, name, err)
		}
		s.cache.stored(key, data, w.Run)
		return false, nil
	}
	it := s.cache.stored(key, raw, w.Run)
	if err := json.Unmarshal(it.val, stored); err != nil {
		return false, fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	return true, nil
}

// GetOnce is GetJSON for a value written by PutOnce: it changes only when a
// run that replaced another stores its own, so it is cached. Under PerRun
// it finds only a value the reader's own run stored; another is
// ErrNotFound.
func (s *Store) GetOnce(ctx context.Context, k Key, name string, v any) error {
	key, err := k.stashKey(name)
	if err != nil {
		return err
	}
	w := WriterOf(ctx)
	it, ok := s.cache.item(key, w.Run)
	if !ok {
		data, err := s.b.ReadAll(ctx, key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			return fmt.Errorf("transcript %s: stash %q: %w", k, name, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
		}
		it = s.cache.stored(key, data, w.Run)
	}
	if isPerRun(ctx) && w.Run != "" && it.writer.Run != w.Run {
		return fmt.Errorf("transcript %s: stash %q holds another run's value: %w", k, name, ErrNotFound)
	}
	if err := json.Unmarshal(it.val, v); err != nil {
		return fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	return nil
}
