package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Follower reads one run's events in order, the retained ones first, then
// live ones as they are published.
type Follower struct {
	b     *Broker
	subj  string // the run's subject: its sub-tasks' are under it
	cons  jetstream.Consumer
	msgs  jetstream.MessagesContext
	after int64 // the last ID returned (or Follow's after)
}

// Follow reads the run's events with ID > after. IDs are stream
// sequences, so the consumer starts at after+1 and the server skips the
// rest. An after beyond the stream's last sequence cannot name an event of
// this stream (the broker lost its store and the stream was made anew,
// numbering from 1 again): the run's events are read from the first.
func (b *Broker) Follow(ctx context.Context, runID string, after int64) (*Follower, error) {
	subj, err := Subject(runID)
	if err != nil {
		return nil, err
	}
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("broker: follow %s: %w", subj, err)
	}
	if after < 0 {
		after = 0
	}
	cfg := jetstream.OrderedConsumerConfig{
		// The run's events and its sub-tasks' (runs.<run>.<path>), in the
		// order the stream stored them.
		FilterSubjects: []string{subj, subj + ".>"},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		// A follower whose process died is cleaned up soon.
		InactiveThreshold: time.Minute,
	}
	if after > 0 {
		last, err := b.lastSequence(ctx)
		if err != nil {
			return nil, fmt.Errorf("broker: follow %s: %w", subj, err)
		}
		if uint64(after) > last {
			after = 0
		} else {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, uint64(after)+1
		}
	}
	cons, err := b.js.OrderedConsumer(ctx, StreamName, cfg)
	if err != nil {
		return nil, fmt.Errorf("broker: follow %s: %w", subj, err)
	}
	msgs, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("broker: follow %s: %w", subj, err)
	}
	return &Follower{b: b, subj: subj, cons: cons, msgs: msgs, after: after}, nil
}

// Next blocks until the next event or ctx's end. Messages that are not
// events, or whose ID does not increase, are skipped.
func (f *Follower) Next(ctx context.Context) (Event, error) {
	for {
		m, err := f.msgs.Next(jetstream.NextContext(ctx))
		if err != nil {
			return Event{}, err
		}
		meta, err := m.Metadata()
		if err != nil || int64(meta.Sequence.Stream) <= f.after {
			continue
		}
		e, err := f.b.decode(m.Data())
		if errors.Is(err, errUnreadable) {
			// It cannot serve the run's text: say so, skip nothing.
			return Event{}, fmt.Errorf("broker: event %d: %w", meta.Sequence.Stream, err)
		}
		if err != nil {
			continue // not an event
		}
		e.ID = int64(meta.Sequence.Stream)
		e.Path = pathOf(m.Subject(), f.subj)
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

// lastSequence is the stream's last sequence: the highest event ID given
// so far. It stays when messages expire.
func (b *Broker) lastSequence(ctx context.Context) (uint64, error) {
	runs := b.runs.Load()
	if runs == nil {
		return 0, b.Err()
	}
	info, err := (*runs).Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.LastSeq, nil
}

// LastID is the ID of the run's last stored event, its sub-tasks' included,
// 0 when it has none.
func (b *Broker) LastID(ctx context.Context, runID string) (int64, error) {
	subj, err := Subject(runID)
	if err != nil {
		return 0, err
	}
	t, _, err := b.readTail(ctx, subj)
	if err != nil {
		return 0, err
	}
	sub, _, err := b.readTail(ctx, subj+".>") // the last of any sub-task's
	return int64(max(t.seq, sub.seq)), err
}
