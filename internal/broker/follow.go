package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Follower reads one run's events in order, the retained ones first, then
// live ones as they are published.
type Follower struct {
	b     *Broker
	cons  jetstream.Consumer
	msgs  jetstream.MessagesContext
	after int64 // the last ID returned (or Follow's after)
}

// Follow reads the run's events with ID > after. It uses an ordered
// consumer over the run's subject from its first message: a run has few
// events, so skipping those at or before after client side is cheap.
func (b *Broker) Follow(ctx context.Context, runID string, after int64) (*Follower, error) {
	subj, err := Subject(runID)
	if err != nil {
		return nil, err
	}
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("broker: follow %s: %w", subj, err)
	}
	cons, err := b.js.OrderedConsumer(ctx, StreamName, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subj},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		// A follower whose process died is cleaned up soon.
		InactiveThreshold: time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: follow %s: %w", subj, err)
	}
	msgs, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("broker: follow %s: %w", subj, err)
	}
	return &Follower{b: b, cons: cons, msgs: msgs, after: after}, nil
}

// Next blocks until the next event or ctx's end. Messages that are not
// events, or whose ID does not increase, are skipped.
func (f *Follower) Next(ctx context.Context) (Event, error) {
	for {
		m, err := f.msgs.Next(jetstream.NextContext(ctx))
		if err != nil {
			return Event{}, err
		}
		e, err := decode(m.Data())
		if err != nil || e.ID <= f.after {
			continue
		}
		f.after = e.ID
		return e, nil
	}
}

// Close stops reading and deletes the server's consumer rather than
// leaving it to expire.
func (f *Follower) Close() {
	f.msgs.Stop()
	info := f.cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = f.b.js.DeleteConsumer(ctx, StreamName, info.Name)
}
