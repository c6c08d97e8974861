package broker

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// maxTries bounds the publishes of one event that lose a race with
// another writer of the same run.
const maxTries = 20

// tail is what a publisher knows of the end of a run's subject: the stream
// sequence and the event of its last message (0 and nil when it has none;
// the event as envelope reads it: its sealed part is not decrypted). The
// sequence is what Nats-Expected-Last-Subject-Sequence checks, so two
// writers can never both append after the same event.
type tail struct {
	seq  uint64
	last *Event
}

// Append publishes one event on the task's subject (a run's or a
// sub-task's: TaskSubject) after the subject's last event, and returns it
// with its ID (its stream sequence).
func (b *Broker) Append(ctx context.Context, runID string, e Event) (Event, error) {
	subj, err := TaskSubject(runID)
	if err != nil {
		return Event{}, err
	}
	t, _, err := b.readTail(ctx, subj)
	if err != nil {
		return Event{}, err
	}
	return b.publish(ctx, subj, e, &t, nil)
}

// readTail reads the subject's last message and its message ID.
func (b *Broker) readTail(ctx context.Context, subj string) (tail, string, error) {
	runs := b.runs.Load()
	if runs == nil { // never ensured: the broker was never reached
		return tail{}, "", fmt.Errorf("broker: read last event of %s: %w", subj, b.Err())
	}
	m, err := (*runs).GetLastMsgForSubject(ctx, subj)
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		if uerr := b.Err(); uerr != nil {
			return tail{}, "", fmt.Errorf("broker: read last event of %s: %w", subj, uerr)
		}
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return tail{}, "", nil
	}
	if err != nil {
		return tail{}, "", fmt.Errorf("broker: read last event of %s: %w", subj, err)
	}
	e, err := envelope(m.Data)
	if err != nil {
		// Ordering cannot go on from a message that is not an event.
		return tail{}, "", fmt.Errorf("broker: last message of %s (sequence %d) is not an event: %w", subj, m.Sequence, err)
	}
	e.ID = int64(m.Sequence)
	return tail{seq: m.Sequence, last: &e}, m.Header.Get(jetstream.MsgIDHeader), nil
}

// publish appends e after t and moves t to it; e's ID is the sequence the
// stream gave it. When another
// writer got there first it rereads the tail, lets check refuse it (a
// Writer stops when a later attempt took over), and tries again.
func (b *Broker) publish(ctx context.Context, subj string, e Event, t *tail, check func(tail) error) (Event, error) {
	// One message ID for every try of this event: a try whose answer was
	// lost is recognised by it (below) or dropped by the server as a
	// duplicate, so an event is never stored twice.
	msgID := crand.Text()
	data, err := b.encode(e)
	if err != nil {
		return Event{}, fmt.Errorf("broker: encode event: %w", err)
	}
	var lastErr error
	for try := range maxTries {
		if try > 0 {
			// Writers that lost together should not collide again: a
			// random wait, growing with each loss.
			if err := sleep(ctx, backoff(try)); err != nil {
				return Event{}, err
			}
		}
		msg := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, msgID)
		ack, err := b.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(t.seq))
		if err != nil && !isConflict(err) {
			if uerr := b.Err(); uerr != nil {
				// The broker is away. The publish failed at once (the
				// connection keeps no buffer while it reconnects) or
				// was stopped (whileUp): say so rather than nats.go's
				// "outbound buffer limit exceeded".
				return Event{}, fmt.Errorf("broker: publish to %s: %w", subj, uerr)
			}
		}
		if err == nil && !ack.Duplicate {
			e.ID = int64(ack.Sequence)
			stored := e
			*t = tail{seq: ack.Sequence, last: &stored}
			return e, nil
		}
		if err == nil { // an earlier try was stored after all
			return b.storedDuplicate(ctx, subj, ack.Sequence, t)
		}
		if ctx.Err() != nil {
			return Event{}, fmt.Errorf("broker: publish to %s: %w", subj, err)
		}
		nt, lastID, rerr := b.readTail(ctx, subj)
		if rerr != nil {
			return Event{}, errors.Join(fmt.Errorf("broker: publish to %s: %w", subj, err), rerr)
		}
		*t = nt
		if lastID == msgID { // stored, but its answer was lost
			e.ID = nt.last.ID
			return e, nil
		}
		if !isConflict(err) {
			return Event{}, fmt.Errorf("broker: publish to %s: %w", subj, err)
		}
		if check != nil {
			if err := check(nt); err != nil {
				return Event{}, err
			}
		}
		lastErr = err
	}
	return Event{}, fmt.Errorf("broker: publish to %s: another writer won %d times: %w", subj, maxTries, lastErr)
}

// storedDuplicate returns the event an earlier try stored at seq, and
// rereads the tail, which may have moved past it.
func (b *Broker) storedDuplicate(ctx context.Context, subj string, seq uint64, t *tail) (Event, error) {
	runs := b.runs.Load()
	if runs == nil {
		return Event{}, fmt.Errorf("broker: read duplicate %d of %s: %w", seq, subj, b.Err())
	}
	m, err := (*runs).GetMsg(ctx, seq)
	if err != nil {
		return Event{}, fmt.Errorf("broker: read duplicate %d of %s: %w", seq, subj, err)
	}
	e, err := b.decode(m.Data)
	if err != nil {
		return Event{}, fmt.Errorf("broker: duplicate %d of %s: %w", seq, subj, err)
	}
	e.ID = int64(m.Sequence)
	nt, _, err := b.readTail(ctx, subj)
	if err != nil {
		return Event{}, err
	}
	*t = nt
	return e, nil
}

// isConflict tells a publish refused because the subject's last sequence
// was not the expected one: another writer appended first.
func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// backoff is a random wait below 1ms << try, at most 50ms.
func backoff(try int) time.Duration {
	limit := min(time.Millisecond<<min(try, 6), 50*time.Millisecond)
	return time.Duration(rand.Int64N(int64(limit)))
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
