package activities

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
)

// Retry reports cost history: each `retrying` signal is about four events
// of the task's run, and a run takes 10,000 signals at most, the caller's
// own `input`, `close` and `cancel-turn` included. So reports are rationed
// per task, across all of its calls that wait in this worker process (50
// waiting arrival checks cost what one does):
//
//   - the first failure is reported at once, and so is the first failure
//     of a kind not yet reported in this outage (the model, storage), and
//     the next failure after the call last reported has ended here while
//     others still wait (the task would show nothing), or after a report
//     that could not be sent;
//   - otherwise the next failure is reported once the last report is a
//     gap old, the gap doubling from a minute to an hour.
//
// A day-long outage therefore costs a task at most 29 reports of one kind
// (no sooner than 0, 1, 3, 7, 15, 31 and 63 minutes in, then hourly), 30
// of both: about 120 history events, whatever the number of waiting calls
// (contract.md, Outages); before, each waiting call reported about 296
// times a day. The outage ends for the task when none of its calls waits
// here any more (each succeeded, failed or was canceled, or has not come
// back for longer than its delay and one attempt: its attempts run
// elsewhere); the next failure starts a new one, reported at once.
//
// Reports carry the reported call's own attempts and next attempt, and as
// At when its first attempt failed, which the workflow shows as `since`:
// a call first reported late still says when its wait began.
//
// Every attempt is a new activity execution, so what a task's outage has
// cost lives here, in the process's memory (outages), keyed by namespace
// and workflow ID; another worker process keeps its own.

const (
	firstReportGap = time.Minute
	maxReportGap   = time.Hour
	// maxReportedKinds bounds the reports made at once for a new kind of
	// failure (only MODEL_UNAVAILABLE and INTERNAL are retried today).
	maxReportedKinds = 4
	// forgetSlack is added to a call's delay and attempt timeout before a
	// call that has not come back is taken to run elsewhere.
	forgetSlack = time.Minute
	// attemptTimeoutUnknown stands for an attempt timeout the activity
	// does not know.
	attemptTimeoutUnknown = time.Hour
)

// outages is what this worker process knows of its tasks' outages.
var outages = newOutageState(time.Now, rand.Float64)

// outageState rations retry reports and draws the jittered delays. now and
// random (in [0, 1)) are injectable for tests; both are called under mu.
type outageState struct {
	mu     sync.Mutex
	now    func() time.Time
	random func() float64
	tasks  map[string]*taskOutage
	swept  time.Time
}

func newOutageState(now func() time.Time, random func() float64) *outageState {
	return &outageState{now: now, random: random, tasks: map[string]*taskOutage{}}
}

// taskOutage is one task's outage as this process sees it.
type taskOutage struct {
	calls map[string]*waitingCall // by run and call name
	shown string                  // the call of the last report; "": the next failure is reported
	kinds map[string]bool         // failure types reported in this outage
	next  time.Time               // the next report is due then
	gap   time.Duration           // the wait after the next report
}

// waitingCall is a call of the task whose last attempt failed here.
type waitingCall struct {
	first   time.Time // when its first attempt failed: the reports' At (status.retrying.since)
	expires time.Time // taken to run elsewhere if it has not failed here again by then
}

// attemptInfo is what a failed attempt tells about its call (from
// activity.GetInfo).
type attemptInfo struct {
	task, run, call string // task: namespace and workflow ID; call: the workflow's name for it
	attempt         int32
	scheduled       time.Time     // when the workflow scheduled the call
	attemptTimeout  time.Duration // the longest one attempt runs
}

func attemptOf(info activity.Info, call string) attemptInfo {
	timeout := info.StartToCloseTimeout
	if timeout <= 0 {
		timeout = attemptTimeoutUnknown
	}
	return attemptInfo{task: info.Namespace + "/" + info.WorkflowExecution.ID, run: info.WorkflowExecution.RunID, call: call,
		attempt: info.Attempt, scheduled: info.ScheduledTime, attemptTimeout: timeout}
}

func (c attemptInfo) key() string { return c.run + "/" + c.call }

// failure is a failed attempt that a retry can fix.
type failure struct {
	typ, msg   string
	retryAfter time.Duration // the provider's Retry-After; 0 none
}

// failed decides what follows a failed attempt of a call that waits out
// outages for limit (the task's modelRetryTimeout): the error that retries
// it after a jittered delay, or the final error once limit has passed; and
// the report to send the task, if this failure is one to report.
//
//lint:ignore ST1008 the error is what the attempt returns, not a failure of failed
func (s *outageState) failed(c attemptInfo, f failure, limit time.Duration) (error, *RetryReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	waited := now.Sub(c.scheduled)
	if waited >= limit {
		s.endLocked(c.task, c.key())
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"%s (still failing after %s and %d attempts; the task waits out outages for modelRetryTimeout %s)",
			f.msg, waited.Round(time.Second), c.attempt, limit), finalType(f.typ), nil), nil
	}
	delay := min(jittered(c.attempt, f.retryAfter, s.random()), limit-waited) // the last attempt runs at the limit
	retry := temporal.NewApplicationErrorWithOptions(f.msg, f.typ, temporal.ApplicationErrorOptions{NextRetryDelay: delay})
	if c.call == "" {
		return retry, nil // nothing to report to
	}
	s.sweepLocked(now)
	t := s.tasks[c.task]
	if t == nil {
		t = &taskOutage{calls: map[string]*waitingCall{}, kinds: map[string]bool{}, gap: firstReportGap}
		s.tasks[c.task] = t
	}
	w := t.calls[c.key()]
	if w == nil {
		w = &waitingCall{first: now}
		if c.attempt > 1 && !c.scheduled.IsZero() {
			w.first = c.scheduled // its first attempts ran elsewhere, from about then
		}
		t.calls[c.key()] = w
	}
	w.expires = now.Add(delay + c.attemptTimeout + forgetSlack)
	newKind := !t.kinds[f.typ] && len(t.kinds) < maxReportedKinds
	if t.shown != "" && !newKind && now.Before(t.next) {
		return retry, nil
	}
	t.shown, t.kinds[f.typ] = c.key(), true
	t.next, t.gap = now.Add(t.gap), min(2*t.gap, maxReportGap)
	return retry, &RetryReport{Call: c.call, Type: f.typ, Message: clip(f.msg, 1000), Attempts: int(c.attempt),
		At: contract.FormatTime(w.first), NextAt: contract.FormatTime(now.Add(delay))}
}

// ended notes that a call no longer waits here: it succeeded, failed for
// good or was canceled.
func (s *outageState) ended(task, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked(task, key)
}

func (s *outageState) endLocked(task, key string) {
	t := s.tasks[task]
	if t == nil {
		return
	}
	delete(t.calls, key)
	if t.shown == key {
		t.shown = "" // the task shows nothing now: the next failure is reported
	}
	if len(t.calls) == 0 {
		delete(s.tasks, task) // the outage is over for this task
	}
}

// unreported notes that the report of a call did not reach its task: the
// task's next failure is reported instead.
func (s *outageState) unreported(task, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tasks[task]; t != nil && t.shown == key {
		t.shown = ""
	}
}

// sweepLocked forgets, at most once a minute, calls that have not come back.
func (s *outageState) sweepLocked(now time.Time) {
	if now.Sub(s.swept) < time.Minute {
		return
	}
	s.swept = now
	for task, t := range s.tasks {
		for key, w := range t.calls {
			if now.After(w.expires) {
				s.endLocked(task, key)
			}
		}
	}
}

// callEnded tells outages that the activity's call no longer waits.
func callEnded(ctx context.Context, r Retry) {
	if r.Call == "" || !activity.IsActivity(ctx) {
		return
	}
	c := attemptOf(activity.GetInfo(ctx), r.Call)
	outages.ended(c.task, c.key())
}

// endsCall says whether an attempt that returns err leaves its call
// waiting: not after a success, a final error or a cancellation (a
// timed-out attempt is retried).
func endsCall(ctx context.Context, err error) bool {
	if err == nil || errors.Is(ctx.Err(), context.Canceled) {
		return true
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.NonRetryable()
	}
	return false
}
