package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
)

// Outages are waited out. A failure a retry can fix (the provider's 429,
// 5xx, timeouts, connection errors, 401/403, a provider this worker does not
// serve; unavailable storage) goes back to Temporal's retry with the delay
// chosen here: full jitter, a random wait up to an exponential ceiling (one
// second, doubling to a minute), so tasks that failed together do not come
// back together; or the provider's Retry-After (up to five minutes) plus up
// to a quarter more. That goes on for as long as the task's
// modelRetryTimeout allows, measured from when the workflow scheduled the
// call; then the failure is final. Temporal does the retrying (no loop
// here), and the task is told of the wait, sparingly (retryreports.go), so
// `status` shows it.

const (
	firstBackoff = time.Second
	maxBackoff   = time.Minute
	// minBackoff is the shortest jittered wait (a zero NextRetryDelay would
	// mean the retry policy's own).
	minBackoff    = 250 * time.Millisecond
	maxRetryAfter = 5 * time.Minute
)

// Signaler is the part of the Temporal client an activity uses to tell its
// task that it is retrying.
type Signaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg interface{}) error
}

// backoff is the ceiling of the wait before attempt n+1 after attempt n
// failed, or the provider's Retry-After.
func backoff(attempt int32, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, maxRetryAfter)
	}
	d := firstBackoff
	for i := int32(1); i < attempt && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// jittered is the wait before attempt n+1, u a random number in [0, 1):
// full jitter, uniform between minBackoff and backoff's ceiling; after a
// Retry-After, which is a minimum, that wait plus up to a quarter of it.
func jittered(attempt int32, retryAfter time.Duration, u float64) time.Duration {
	d := backoff(attempt, retryAfter)
	if retryAfter > 0 {
		return d + time.Duration(u*float64(d)/4)
	}
	return minBackoff + time.Duration(u*float64(d-minBackoff))
}

// finalType is what a transient failure becomes once the task stops waiting.
func finalType(transient string) string {
	if transient == contract.ErrInternal {
		return contract.ErrInternal // storage, not the model
	}
	return contract.ErrModel
}

// waitOut turns a failed attempt into what Temporal should do next. err
// comes from the activity's body: a non-retryable error passes as it is; a
// retryable one is retried after the chosen delay, or made final once the
// task's retry timeout has passed. A call that no longer waits (success,
// final error, cancellation) ends its part in the task's outage.
func (a *Activities) waitOut(ctx context.Context, r Retry, err error) error {
	out := a.afterAttempt(ctx, r, err)
	if endsCall(ctx, out) {
		callEnded(ctx, r)
	}
	return out
}

func (a *Activities) afterAttempt(ctx context.Context, r Retry, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	f := failure{typ: contract.ErrInternal, msg: err.Error()} // unclassified: a fault of the worker's own I/O
	var ae *temporal.ApplicationError
	var se *contract.Error
	if !errors.As(err, &ae) && errors.As(err, &se) {
		// A typed refusal (a bad reference, a changed file, ...): no retry fixes it.
		return temporal.NewNonRetryableApplicationError(se.Message, se.Type, nil)
	}
	if ae != nil {
		if ae.NonRetryable() {
			return err
		}
		f = failure{typ: ae.Type(), msg: ae.Message(), retryAfter: ae.NextRetryDelay()}
	}
	if r.Timeout == "" {
		return err // a task on older rules: its retry policy counts attempts
	}
	limit, perr := time.ParseDuration(r.Timeout)
	if perr != nil {
		return temporal.NewNonRetryableApplicationError("modelRetryTimeout: "+perr.Error(), contract.ErrInvalidInput, nil)
	}
	info := activity.GetInfo(ctx)
	out, report := outages.failed(attemptOf(info, r.Call), f, limit)
	if report != nil && !a.report(ctx, *report) {
		c := attemptOf(info, r.Call)
		outages.unreported(c.task, c.key()) // made at the next failure instead
	}
	if errors.As(out, &ae) && !ae.NonRetryable() {
		activity.GetLogger(ctx).Warn("waiting out an outage", "type", f.typ, "attempt", info.Attempt,
			"next_in", ae.NextRetryDelay(), "reported", report != nil, "error", f.msg)
	}
	return out
}

// report tells the task, best effort, and says whether the signal went.
func (a *Activities) report(ctx context.Context, r RetryReport) bool {
	if a.Signals == nil || r.Call == "" {
		return true // nobody to tell
	}
	info := activity.GetInfo(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := a.Signals.SignalWorkflow(sctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, SignalRetrying, r); err != nil {
		activity.GetLogger(ctx).Warn("could not report the retry to the task", "error", err)
		return false
	}
	return true
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
