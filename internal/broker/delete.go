package broker

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Purge removes every stored event of the run's subject and reports how
// many there were. Purging a run with no events succeeds with 0, so a
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
	info, err := (*runs).Info(ctx, jetstream.WithSubjectFilter(subj))
	if err != nil {
		return 0, fmt.Errorf("broker: count the events of %s: %w", subj, err)
	}
	n := int(info.State.Subjects[subj])
	if n == 0 {
		return 0, nil
	}
	if err := (*runs).Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
		return 0, fmt.Errorf("broker: purge %s: %w", subj, err)
	}
	return n, nil
}
