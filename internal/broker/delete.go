package broker

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Purge removes every stored event of the run's subject and of its
// sub-tasks' and reports how many there were. Purging a run with no events succeeds with 0, so a
// repeated purge is harmless. While streaming is off it fails with an
// error matching ErrUnavailable (worth retrying).
func (b *Broker) Purge(ctx context.Context, runID string) (int, error) {
	subj, err := Subject(runID)
	if err != nil {
		return 0, err
	}
	ctx, done, err := b.whileUp(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	runs := b.runs.Load()
	if runs == nil {
		return 0, b.Err()
	}
	total := 0
	for _, filter := range []string{subj, subj + ".>"} { // the run's events, then its sub-tasks'
		info, err := (*runs).Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return total, fmt.Errorf("broker: count the events of %s: %w", filter, err)
		}
		n := 0
		for _, c := range info.State.Subjects {
			n += int(c)
		}
		if n == 0 {
			continue
		}
		if err := (*runs).Purge(ctx, jetstream.WithPurgeSubject(filter)); err != nil {
			return total, fmt.Errorf("broker: purge %s: %w", filter, err)
		}
		total += n
	}
	return total, nil
}
