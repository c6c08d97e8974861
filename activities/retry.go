package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/schema"
)

// Outages are waited out. A failure a retry can fix (the provider's 429,
// 5xx, timeouts, connection errors, 401/403, a provider this worker does not
// serve; unavailable storage) goes back to Temporal's retry with the delay
// chosen here: exponential from one second, capped at a minute, or the
// provider's Retry-After up to five minutes. That goes on for as long as the
// task's modelRetryTimeout allows, measured from when the workflow scheduled
// the call; then the failure is final. Temporal does the retrying (no loop
// here), and each attempt tells the task, so `status` shows the wait.

const (
	firstBackoff  = time.Second
	maxBackoff    = time.Minute
	maxRetryAfter = 5 * time.Minute
	// Reports go to the task for the first reportEvery*2 attempts, then for
	// every reportEvery-th: history stays small over a day of retries.
	reportEvery = 5
)

// Signaler is the part of the Temporal client an activity uses to tell its
// task that it is retrying.
type Signaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg interface{}) error
}

// backoff is the wait before attempt n+1 after attempt n failed.
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

// finalType is what a transient failure becomes once the task stops waiting.
func finalType(transient string) string {
	if transient == schema.ErrInternal {
		return schema.ErrInternal // storage, not the model
	}
	return schema.ErrModel
}

// waitOut turns a failed attempt into what Temporal should do next. err
// comes from the activity's body: a non-retryable error passes as it is; a
// retryable one is retried after the chosen delay, or made final once the
// task's retry timeout has passed.
func (a *Activities) waitOut(ctx context.Context, r Retry, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	typ, msg, retryAfter := schema.ErrInternal, err.Error(), time.Duration(0) // unclassified: a fault of the worker's own I/O
	var ae *temporal.ApplicationError
	var se *schema.Error
	if !errors.As(err, &ae) && errors.As(err, &se) {
		// A typed refusal (a bad reference, a changed file, ...): no retry fixes it.
		return temporal.NewNonRetryableApplicationError(se.Message, se.Type, nil)
	}
	if ae != nil {
		if ae.NonRetryable() {
			return err
		}
		typ, msg, retryAfter = ae.Type(), ae.Message(), ae.NextRetryDelay()
	}
	if r.Timeout == "" {
		return err // a task on older rules: its retry policy counts attempts
	}
	limit, perr := time.ParseDuration(r.Timeout)
	if perr != nil {
		return temporal.NewNonRetryableApplicationError("modelRetryTimeout: "+perr.Error(), schema.ErrInvalidInput, nil)
	}
	info := activity.GetInfo(ctx)
	now := time.Now()
	waited := now.Sub(info.ScheduledTime)
	if waited >= limit {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"%s (still failing after %s and %d attempts; the task waits out outages for modelRetryTimeout %s)",
			msg, waited.Round(time.Second), info.Attempt, r.Timeout), finalType(typ), nil)
	}
	delay := min(backoff(info.Attempt, retryAfter), limit-waited) // the last attempt runs at the limit
	if info.Attempt <= 2*reportEvery || info.Attempt%reportEvery == 0 {
		a.report(ctx, RetryReport{Call: r.Call, Type: typ, Message: clip(msg, 1000), Attempts: int(info.Attempt),
			At: schema.FormatTime(now), NextAt: schema.FormatTime(now.Add(delay))})
	}
	activity.GetLogger(ctx).Warn("waiting out an outage", "type", typ, "attempt", info.Attempt, "next_in", delay, "error", msg)
	return temporal.NewApplicationErrorWithOptions(msg, typ, temporal.ApplicationErrorOptions{NextRetryDelay: delay})
}

// report tells the task, best effort: a report that does not arrive only
// leaves status.retrying a step behind.
func (a *Activities) report(ctx context.Context, r RetryReport) {
	if a.Signals == nil || r.Call == "" {
		return
	}
	info := activity.GetInfo(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := a.Signals.SignalWorkflow(sctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, SignalRetrying, r); err != nil {
		activity.GetLogger(ctx).Warn("could not report the retry to the task", "error", err)
	}
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
