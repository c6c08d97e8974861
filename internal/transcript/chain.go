package transcript

import (
	"context"
	"encoding/json"
	"fmt"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// entryBlob is the blob key of position pos as k sees it: in k's own
// transcript, or, below k.From, in the transcript k continues (followed
// through link objects as far as the chain goes).
func (s *Store) entryBlob(ctx context.Context, k Key, pos int) (string, error) {
	for depth := 0; pos < k.From; depth++ {
		p := k.Parent
		if p == nil {
			l, err := s.readLink(ctx, k)
			if err != nil {
				return "", err
			}
			p = &l
		}
		// A transcript's own entries never start before its parent's; a
		// made-up chain (a cycle) ends at the depth bound.
		if p.From > k.From || depth >= maxChain {
			return "", fmt.Errorf("transcript %s: its chain of continued transcripts is malformed at %s/%s (from %d, parent from %d)", k, p.TaskID, p.FirstRunID, k.From, p.From)
		}
		k = p.Key()
	}
	return k.entryKey(pos)
}

// maxChain bounds how many continued transcripts one read follows.
const maxChain = 1000

// WriteLink records k.Parent in k's link object, so that a task continuing
// k's task finds k's ancestors (its own key names k only), then records k
// as a continuation in the folder of the transcript it continues
// (RecordContinuation), so deleting that one keeps what k reads. Writing
// the same link again succeeds; a different one fails with ErrConflict.
func (s *Store) WriteLink(ctx context.Context, k Key) error {
	if k.Parent == nil {
		return nil
	}
	if err := s.writeLink(ctx, k); err != nil {
		return err
	}
	return s.recordOnce(ctx, k)
}

func (s *Store) writeLink(ctx context.Context, k Key) error {
	key, err := k.linkKey()
	if err != nil {
		return err
	}
	data, _ := json.Marshal(k.Parent)
	err = s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json", IfNotExist: true})
	if err == nil {
		s.cache.add(key, data)
		return nil
	}
	if gcerrors.Code(err) != gcerrors.FailedPrecondition {
		return fmt.Errorf("transcript %s: write link: %w", k, err)
	}
	old, err := s.b.ReadAll(ctx, key)
	if err != nil {
		return fmt.Errorf("transcript %s: read back link: %w", k, err)
	}
	if !sameJSON(old, data) {
		return fmt.Errorf("transcript %s: link: %w", k, ErrConflict)
	}
	return nil
}

func (s *Store) readLink(ctx context.Context, k Key) (Link, error) {
	var l Link
	key, err := k.linkKey()
	if err != nil {
		return l, err
	}
	data, ok := s.cache.get(key)
	if !ok {
		data, err = s.b.ReadAll(ctx, key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			return l, fmt.Errorf("transcript %s: its entries below %d are another transcript's, and its link naming that one is missing: %w", k, k.From, ErrNotFound)
		}
		if err != nil {
			return l, fmt.Errorf("transcript %s: read link: %w", k, err)
		}
		s.cache.add(key, data)
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return l, fmt.Errorf("transcript %s: link: %w", k, err)
	}
	return l, nil
}
