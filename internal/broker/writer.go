package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agenttask/agenttask/contract"
)

// ErrStale is Open's answer to a model call attempt that is no longer the
// run's newest: a later attempt of its turn, or a later turn, already
// published. Such a zombie attempt must not publish.
var ErrStale = errors.New("broker: a later model call attempt already streams this run")

// errClosed answers Done and Fail after Close.
var errClosed = errors.New("broker: writer closed")

const (
	// publishTimeout bounds one background text publish: past it the
	// writer gives up streaming (the broker is down or cut off).
	publishTimeout = 10 * time.Second
	// closeTimeout bounds Close's flush of queued text.
	closeTimeout = 2 * time.Second
	// maxTextChunk bounds one text event's text. JSON may escape a control
	// character as six bytes, and 6 × 128 KiB stays under maxMsgSize.
	maxTextChunk = 128 << 10

	interruptedMessage = "the model call was retried; the answer starts again"
)

// Writer publishes one answer of a model call attempt for a run: text as
// the model writes it, then done or error (or an interruption, when the
// answer is cut short and a next one follows). Streaming is best effort:
// after one failed publish the writer stops and Err says why.
type Writer struct {
	b             *Broker
	subj          string
	turn, attempt int
	answer        int // the turn's answer this writer publishes (Event.Answer)

	ctx     context.Context // background publishes; canceled when Close gives up
	cancel  context.CancelFunc
	wake    chan struct{} // text queued (capacity 1: wakes coalesce)
	stop    chan struct{} // closed by Close
	stopped chan struct{} // closed when the publisher has returned
	once    sync.Once

	// sem is held by whoever publishes, so events keep their order and
	// the tail is only ever used by one publish at a time.
	sem    chan struct{}
	t      tail
	opened *Event // the subject's last event when the writer opened

	mu      sync.Mutex
	pending []byte // text queued, not yet published
	sent    bool
	err     error
	closed  bool
}

// Open starts a writer for one answer of a model call attempt of a run's
// turn. It refuses a stale attempt (ErrStale) and ends an earlier answer's
// text that was never finished with an interruption, so no reader splices
// two answers' text; the writer's answer is the turn's next (Event.Answer).
func (b *Broker) Open(ctx context.Context, runID string, turn, attempt int) (*Writer, error) {
	subj, err := Subject(runID)
	if err != nil {
		return nil, err
	}
	ctx, done, err := b.whileUp(ctx) // streaming off: no writer, at once
	if err != nil {
		return nil, fmt.Errorf("broker: open %s: %w", subj, err)
	}
	defer done()
	t, answer, err := b.takeOver(ctx, subj, turn, attempt)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		b: b, subj: subj, turn: turn, attempt: attempt, answer: answer, t: t, opened: t.last,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
		sem: make(chan struct{}, 1),
	}
	// The broker going away stops the publisher at once, a publish in
	// flight included: the attempt's streaming ends there.
	if w.ctx, w.cancel, err = b.whileUp(context.Background()); err != nil {
		return nil, fmt.Errorf("broker: open %s: %w", subj, err)
	}
	go w.run()
	return w, nil
}

// takeOver reads the subject's end and, when an earlier answer left its
// text unfinished (its attempt failed without saying so, or its end was
// lost), appends the interruption; it starts over when another writer
// appended meanwhile. It returns the tail and the new writer's answer.
func (b *Broker) takeOver(ctx context.Context, subj string, turn, attempt int) (tail, int, error) {
	changed := errors.New("the tail moved")
	for range maxTries {
		t, _, err := b.readTail(ctx, subj)
		if err != nil {
			return tail{}, 0, err
		}
		if stale(t.last, turn, attempt) {
			return tail{}, 0, ErrStale
		}
		last := t.last
		answer := nextAnswer(last, turn)
		if last == nil || last.Type != TypeText {
			return t, answer, nil
		}
		// The interruption is this attempt's: an earlier attempt still
		// running (a zombie) then finds a later attempt at the tail and
		// stops instead of appending after it. It ends the answer the
		// text belongs to.
		interrupt := Event{Turn: turn, Attempt: attempt, Answer: last.AnswerNumber(), Type: TypeError,
			Code: CodeStreamInterrupted, Message: interruptedMessage}
		_, err = b.publish(ctx, subj, interrupt, &t, func(tail) error { return changed })
		if err == nil {
			return t, answer, nil
		}
		if !errors.Is(err, changed) {
			return tail{}, 0, err
		}
	}
	return tail{}, 0, fmt.Errorf("broker: open %s: other writers kept appending", subj)
}

// nextAnswer is the number of an answer that starts after last: the next
// of last's when last is of the same turn (an answer of it began, and was
// cut short or is cut now), else the turn's first.
func nextAnswer(last *Event, turn int) int {
	if last == nil || last.Turn != turn {
		return 1
	}
	return last.AnswerNumber() + 1
}

// stale reports whether last was published by a later attempt of the turn
// or by a later turn. Turn 0 (the API's own events) says nothing.
func stale(last *Event, turn, attempt int) bool {
	if last == nil || last.Turn == 0 {
		return false
	}
	return last.Turn > turn || (last.Turn == turn && last.Attempt > attempt)
}

// Text queues a delta. It never blocks on the network: the publisher
// sends the first delta at once and coalesces those queued while a publish
// is in flight into the next event.
func (w *Writer) Text(delta string) {
	if delta == "" {
		return
	}
	w.mu.Lock()
	if w.closed || w.err != nil {
		w.mu.Unlock()
		return
	}
	w.pending = append(w.pending, delta...)
	w.sent = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // a wake is already due; it will take this delta too
	}
}

// Answer is the turn's answer this writer publishes (1-based).
func (w *Writer) Answer() int { return w.answer }

// TurnDone reports whether the subject's last event, when the writer
// opened, was this turn's done: an earlier attempt finished the turn's
// events, and a retry that answers with the stored answer has nothing to add.
func (w *Writer) TurnDone() bool {
	return w.opened != nil && w.opened.Type == TypeDone && w.opened.Turn == w.turn
}

// SentText reports whether any text of this writer was published or is
// queued: its attempt's answer has begun for readers.
func (w *Writer) SentText() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sent
}

// Err returns the first publish error; the writer publishes nothing after it.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Done flushes queued text, then appends the done event.
// answer is the JSON answer of an agent that answers in JSON, or nil.
func (w *Writer) Done(ctx context.Context, stopReason string, usage contract.Usage, answer json.RawMessage) error {
	return w.finish(ctx, Event{Type: TypeDone, StopReason: stopReason, Usage: &usage, JSON: answer})
}

// Fail flushes queued text, then appends an error event: the turn's error,
// or with code CodeStreamInterrupted the interruption of this answer.
func (w *Writer) Fail(ctx context.Context, code, message string) error {
	return w.finish(ctx, Event{Type: TypeError, Code: code, Message: message})
}

func (w *Writer) finish(ctx context.Context, e Event) error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return errClosed
	}
	// A broker that goes away meanwhile ends the wait at once.
	ctx, done, err := w.b.whileUp(ctx)
	if err != nil {
		// The writer stops here too, whether or not a queued flush has
		// failed yet: nothing is published after a finish that could not be.
		err = fmt.Errorf("broker: %s: %w", w.subj, err)
		w.stopWith(err)
		return err
	}
	defer done()
	if err := w.acquire(ctx); err != nil {
		return w.stoppedBy(err)
	}
	defer w.release()
	if err := w.flush(ctx); err != nil {
		return err
	}
	return w.append(ctx, e)
}

// stoppedBy is err, or why streaming is off when the broker's going away
// is what stopped the wait.
func (w *Writer) stoppedBy(err error) error {
	if uerr := w.b.Err(); uerr != nil {
		return fmt.Errorf("broker: %s: %w", w.subj, uerr)
	}
	return err
}

// Close stops the publisher, flushing queued text within closeTimeout.
func (w *Writer) Close() {
	w.once.Do(func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		close(w.stop)
		timer := time.NewTimer(closeTimeout)
		defer timer.Stop()
		select {
		case <-w.stopped:
		case <-timer.C:
			w.cancel() // a publish hangs: give it up
			<-w.stopped
		}
		w.cancel()
	})
}

// run is the background publisher.
func (w *Writer) run() {
	defer close(w.stopped)
	for {
		select {
		case <-w.wake:
			if err := w.acquire(w.ctx); err != nil {
				w.stopWith(w.stoppedBy(err)) // queued text is dropped
				return
			}
			ctx, cancel := context.WithTimeout(w.ctx, publishTimeout)
			_ = w.flush(ctx) // a failure is kept in w.err
			cancel()
			w.release()
		case <-w.stop:
			ctx, cancel := context.WithTimeout(w.ctx, closeTimeout)
			defer cancel()
			if w.acquire(ctx) == nil {
				_ = w.flush(ctx)
				w.release()
			}
			return
		}
	}
}

func (w *Writer) acquire(ctx context.Context) error {
	select {
	case w.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Writer) release() { <-w.sem }

// flush publishes all queued text, in events of at most maxTextChunk
// bytes. The caller holds sem.
func (w *Writer) flush(ctx context.Context) error {
	for {
		w.mu.Lock()
		if w.err != nil {
			w.mu.Unlock()
			return w.err
		}
		n := chunkLen(w.pending, maxTextChunk)
		text := string(w.pending[:n])
		w.pending = w.pending[n:]
		w.mu.Unlock()
		if text == "" {
			return nil
		}
		if err := w.append(ctx, Event{Type: TypeText, Text: text}); err != nil {
			return err
		}
	}
}

// append publishes one event of this attempt after the tail the writer
// keeps, so a normal append needs no read. The caller holds sem.
func (w *Writer) append(ctx context.Context, e Event) error {
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err != nil {
		return err
	}
	e.Turn, e.Attempt, e.Answer = w.turn, w.attempt, w.answer
	_, err = w.b.publish(ctx, w.subj, e, &w.t, func(t tail) error {
		if stale(t.last, w.turn, w.attempt) {
			return ErrStale
		}
		return nil
	})
	if err != nil {
		w.stopWith(err)
	}
	return err
}

// stopWith keeps the writer's first error and drops queued text: nothing
// is published after it.
func (w *Writer) stopWith(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
	w.pending = nil
}

// chunkLen is how much of b fits in one event: at most limit bytes, cut at
// a rune boundary.
func chunkLen(b []byte, limit int) int {
	if len(b) <= limit {
		return len(b)
	}
	n := limit
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	if n == 0 { // not UTF-8: cut anywhere
		return limit
	}
	return n
}
