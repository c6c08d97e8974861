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
	b      *Broker
	subj   string
	at     Position
	answer int // the turn's answer this writer publishes (Event.Answer)
	// factsDone counts the step's facts already stored when the writer
	// opened (an earlier attempt published them): Facts skips them.
	factsDone int
	wrapped   bool // text events are marked Wrapped (SetWrapped)

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

// Position is where a model call attempt's events belong: the run's turn,
// the turn's model call (its step: 0 for a run whose turns stream one call
// only) and the call's Temporal attempt. Positions are ordered in that
// order: a writer at an earlier one than the subject's last event is stale.
type Position struct{ Turn, Step, Attempt int }

// Open starts a writer for one answer of a model call attempt of a run's
// turn (step 0: Position's). See OpenAt.
func (b *Broker) Open(ctx context.Context, runID string, turn, attempt int) (*Writer, error) {
	return b.OpenAt(ctx, runID, Position{Turn: turn, Attempt: attempt})
}

// OpenAt starts a writer for one answer of a model call attempt at. It
// refuses a stale attempt (ErrStale) and ends an earlier answer that was
// never finished with an interruption (its text or the tool calls it asked
// for), so no reader splices two answers; the writer's answer is the
// turn's next (Event.Answer).
func (b *Broker) OpenAt(ctx context.Context, runID string, at Position) (*Writer, error) {
	subj, err := TaskSubject(runID)
	if err != nil {
		return nil, err
	}
	ctx, done, err := b.whileUp(ctx) // streaming off: no writer, at once
	if err != nil {
		return nil, fmt.Errorf("broker: open %s: %w", subj, err)
	}
	defer done()
	t, answer, err := b.takeOver(ctx, subj, at)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		b: b, subj: subj, at: at, answer: answer, t: t, opened: t.last, factsDone: factsStored(t.last, at),
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

// factsStored counts the facts of at's step stored before the tail last
// (inclusive). Facts come first in a step, so a provisional event, an end
// or an interruption of the step after them means all were stored.
func factsStored(last *Event, at Position) int {
	if last == nil || at.Step == 0 || last.Turn != at.Turn || last.Step != at.Step {
		return 0
	}
	if last.Fact > 0 {
		return last.Fact
	}
	return maxFacts
}

// maxFacts stands for "every fact of the step".
const maxFacts = 1 << 30

// takeOver reads the subject's end and, when an earlier answer was left
// unfinished (its text or tool calls; its attempt failed without saying
// so, or its end was lost), appends the interruption; it starts over when
// another writer appended meanwhile. It returns the tail and the new
// writer's answer.
func (b *Broker) takeOver(ctx context.Context, subj string, at Position) (tail, int, error) {
	changed := errors.New("the tail moved")
	for range maxTries {
		t, _, err := b.readTail(ctx, subj)
		if err != nil {
			return tail{}, 0, err
		}
		if stale(t.last, at) {
			return tail{}, 0, ErrStale
		}
		last := t.last
		answer := nextAnswer(last, at.Turn)
		if !unfinished(last, at) {
			return t, answer, nil
		}
		// The interruption is this attempt's: an earlier attempt still
		// running (a zombie) then finds a later attempt at the tail and
		// stops instead of appending after it. It ends the answer the
		// text belongs to.
		interrupt := Event{Turn: at.Turn, Step: at.Step, Attempt: at.Attempt, Answer: last.AnswerNumber(), Type: TypeError,
			Code: CodeStreamInterrupted, Message: interruptedMessage}
		if last.Step != at.Step || last.Attempt != at.Attempt {
			interrupt.CutStep, interrupt.CutAttempt = last.Step, last.Attempt
		}
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

// unfinished reports whether last is an answer left unfinished that a
// writer at at must end: text, whatever step wrote it (text is never an
// answer's last event), or tool calls an earlier attempt of at's own step
// asked for (those of an earlier step were run: the workflow went on).
func unfinished(last *Event, at Position) bool {
	switch {
	case last == nil:
		return false
	case last.Type == TypeText:
		return true
	case last.Type == TypeToolCallStarted:
		return last.Turn == at.Turn && last.Step == at.Step
	}
	return false
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

// stale reports whether last was published at a later position than at:
// a later turn, a later step of the turn, or a later attempt of the step.
// Turn 0 (the API's own events) says nothing.
func stale(last *Event, at Position) bool {
	if last == nil || last.Turn == 0 {
		return false
	}
	if last.Turn != at.Turn {
		return last.Turn > at.Turn
	}
	if last.Step != at.Step {
		return last.Step > at.Step
	}
	return last.Attempt > at.Attempt
}

// SetWrapped marks this writer's text as the model's, not the reply
// (Event.Wrapped). Call it before the first Text.
func (w *Writer) SetWrapped() { w.wrapped = true }

// Facts publishes the step's facts in order (each numbered by its place,
// from 1), skipping those an earlier attempt of the step stored. Call it
// before any text: a step's facts come first.
func (w *Writer) Facts(ctx context.Context, facts []Event) error {
	if w.factsDone >= len(facts) {
		return nil
	}
	return w.exclusive(ctx, func(ctx context.Context) error {
		for i := w.factsDone; i < len(facts); i++ {
			e := facts[i]
			e.Fact = i + 1
			if err := w.append(ctx, e); err != nil {
				return err
			}
			w.factsDone = i + 1
		}
		return nil
	})
}

// ToolCalls flushes queued text, then appends the tool calls the answer
// asked for, and ends the writer's answer: the workflow runs them and the
// turn's next step answers on.
func (w *Writer) ToolCalls(ctx context.Context, calls []ToolCall) error {
	events := make([]Event, len(calls))
	for i := range calls {
		events[i] = Event{Type: TypeToolCallStarted, Tool: &calls[i]}
	}
	return w.Publish(ctx, events...)
}

// Publish flushes queued text, then appends events of this attempt (a
// budget wait, the tool calls it asked for).
func (w *Writer) Publish(ctx context.Context, events ...Event) error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return errClosed
	}
	return w.exclusive(ctx, func(ctx context.Context) error {
		if err := w.flush(ctx); err != nil {
			return err
		}
		for _, e := range events {
			if err := w.append(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
}

// exclusive runs publish while the broker is up, holding sem: a broker
// that goes away meanwhile ends the wait at once, and stops the writer (as
// a failed publish does): nothing is published after it.
func (w *Writer) exclusive(ctx context.Context, publish func(context.Context) error) error {
	ctx, done, err := w.b.whileUp(ctx)
	if err != nil {
		err = fmt.Errorf("broker: %s: %w", w.subj, err)
		w.stopWith(err)
		return err
	}
	defer done()
	if err := w.acquire(ctx); err != nil {
		return w.stoppedBy(err)
	}
	defer w.release()
	return publish(ctx)
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
	return w.opened != nil && w.opened.Type == TypeDone && w.opened.Turn == w.at.Turn && w.opened.Step == w.at.Step
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

func (w *Writer) finish(ctx context.Context, e Event) error { return w.Publish(ctx, e) }

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
		if err := w.append(ctx, Event{Type: TypeText, Text: text, Wrapped: w.wrapped}); err != nil {
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
	e.Turn, e.Step, e.Attempt, e.Answer = w.at.Turn, w.at.Step, w.at.Attempt, w.answer
	_, err = w.b.publish(ctx, w.subj, e, &w.t, func(t tail) error {
		if stale(t.last, w.at) {
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
