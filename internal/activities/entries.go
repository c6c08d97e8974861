package activities

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/agenttask/agenttask/contract"
)

// WriteEntries makes entries durable without a model call.
func (a *Activities) WriteEntries(ctx context.Context, in WriteEntriesInput) error {
	return a.persist(ctx, in.Transcript, in.Entries)
}

// persist writes committed inputs and stamps pending outputs. Both are
// idempotent, so retries and re-sent entries of a canceled turn are safe.
func (a *Activities) persist(ctx context.Context, k TranscriptKey, e Entries) error {
	_, err := a.persistEntries(ctx, k, e)
	return err
}

// persistParallelism bounds the concurrent blob writes of one call, as the
// transcript store bounds its own (8): enough to hide a blob store's latency.
const persistParallelism = 8

// persistEntries is persist returning the final entries by position.
func (a *Activities) persistEntries(ctx context.Context, k TranscriptKey, e Entries) (map[int]contract.Message, error) {
	fresh, durable, err := a.startPersist(ctx, k, e)
	if err != nil {
		return nil, err
	}
	return fresh, durable()
}

// startPersist reads the pending outputs the stamps name and starts
// writing the stamped outputs and the committed inputs. It returns the
// final entries by position at once, and durable, which waits for the
// writes: a model call runs while they land (its request needs only the
// entries, not their being stored), and nothing the call returns is
// returned before durable has succeeded. The writes are independent, so
// they run at once, at most persistParallelism at a time (a turn may
// commit a hundred queued inputs), and a failure does not stop the
// others. durable's error is that of the first failed entry in order
// (stamps, then writes), not the first to fail.
func (a *Activities) startPersist(ctx context.Context, k TranscriptKey, e Entries) (map[int]contract.Message, func() error, error) {
	stamped := make([]contract.Message, len(e.Stamps))
	if len(e.Stamps) > 0 {
		var g errgroup.Group
		g.SetLimit(persistParallelism)
		readErrs := make([]error, len(e.Stamps))
		for i, s := range e.Stamps {
			g.Go(func() error {
				m, err := a.Transcript.GetPending(ctx, k, s.Position, s.Turn)
				if err != nil {
					readErrs[i] = storageError(fmt.Sprintf("reading the output of turn %d", s.Turn), err)
					return readErrs[i]
				}
				m.CommittedAt = s.CommittedAt
				stamped[i] = m
				return nil
			})
		}
		if g.Wait() != nil {
			for _, err := range readErrs {
				if err != nil {
					return nil, nil, err
				}
			}
		}
	}
	out := make(map[int]contract.Message, len(e.Stamps)+len(e.Write))
	for i, s := range e.Stamps {
		out[s.Position] = stamped[i]
	}
	for _, w := range e.Write {
		out[w.Position] = w.Entry
	}
	if len(e.Stamps)+len(e.Write) == 0 {
		return out, func() error { return nil }, nil
	}

	errs := make([]error, len(e.Stamps)+len(e.Write))
	var g errgroup.Group
	g.SetLimit(persistParallelism)
	for i, s := range e.Stamps {
		g.Go(func() error {
			if err := a.Transcript.WriteAt(ctx, k, s.Position, stamped[i]); err != nil {
				errs[i] = storageError(fmt.Sprintf("stamping the output at %d", s.Position), err)
				return errs[i]
			}
			return nil
		})
	}
	for i, w := range e.Write {
		g.Go(func() error {
			if err := a.Transcript.WriteAt(ctx, k, w.Position, w.Entry); err != nil {
				errs[len(e.Stamps)+i] = storageError(fmt.Sprintf("writing entry %d", w.Position), err)
				return errs[len(e.Stamps)+i]
			}
			return nil
		})
	}
	var once sync.Once
	var result error
	durable := func() error {
		once.Do(func() {
			if g.Wait() != nil {
				for _, err := range errs {
					if err != nil {
						result = err
						return
					}
				}
			}
		})
		return result
	}
	return out, durable, nil
}
