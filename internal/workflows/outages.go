package workflows

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/internal/activities"
)

// Outages are waited out (rules.waitOutOutages). Model calls, the shaping
// pass and arrival checks retry without an attempt limit; the activity picks each
// delay and makes the failure final once the task's modelRetryTimeout has
// passed (activities/retry.go). ScheduleToClose is only a backstop for
// attempts that never report (a worker dying on every attempt).
//
// Model calls heartbeat with a 30 s timeout: a slow frontend no longer
// cancels calls fleet-wide. The worker sends heartbeats at least every
// second (MaxHeartbeatThrottleInterval), so cancel-turn still reaches a call
// within about two seconds.

// outages are the activity calls running now (by their retry name) and
// the last report of each that waits out an outage, newest last.
type outages struct {
	calls   map[string]bool
	reports []retryState
}

// waitingOptions returns base (a call's options) as rules.waitOutOutages
// runs it: the same retry policy without an attempt limit and with waits up
// to a minute, a backstop of modelRetryTimeout plus one attempt, and heartbeat, when set,
// as the heartbeat timeout. Older rules keep base as it is.
func (t *task) waitingOptions(base workflow.ActivityOptions, heartbeat time.Duration) workflow.ActivityOptions {
	if !t.rules.waitOutOutages {
		return base
	}
	o := base
	if heartbeat > 0 {
		o.HeartbeatTimeout = heartbeat
	}
	o.ScheduleToCloseTimeout = t.args.retryTimeout() + o.StartToCloseTimeout
	p := *base.RetryPolicy
	p.MaximumAttempts, p.MaximumInterval = 0, time.Minute
	o.RetryPolicy = &p
	return o
}

// retry names a call for its retry reports; "" on older rules (no reports,
// the retry policy's attempt limit applies).
func (t *task) retry(call string) activities.Retry {
	if !t.rules.waitOutOutages {
		return activities.Retry{}
	}
	return activities.Retry{Call: call, Timeout: t.args.retryTimeout().String()}
}

// waiting marks a call as running until the returned func is called: only
// running calls are shown as retrying.
func (t *task) waiting(call string) func() {
	t.outages.calls[call] = true
	return func() {
		delete(t.outages.calls, call)
		for i, r := range t.outages.reports {
			if r.call == call {
				t.outages.reports = append(t.outages.reports[:i], t.outages.reports[i+1:]...)
				t.trackAgentState(t.life.root) // no longer retrying
				break
			}
		}
	}
}

// retryState is the last report of a call that waits out an outage.
type retryState struct {
	call string
	Retrying
}

// onRetrying takes a report from an activity that is waiting out an outage.
func (t *task) onRetrying(ctx workflow.Context, raw converter.RawValue) {
	data, err := payloadJSON(raw)
	var r activities.RetryReport
	if err != nil || json.Unmarshal(data, &r) != nil || !t.outages.calls[r.Call] {
		return // a late report, or not one of ours: nothing is waiting
	}
	st := retryState{call: r.Call, Retrying: Retrying{Type: r.Type, Message: r.Message, Attempts: r.Attempts, Since: r.At, NextAt: r.NextAt}}
	for i, old := range t.outages.reports {
		if old.call == r.Call {
			st.Since = old.Since // the outage began at the first report
			t.outages.reports = append(t.outages.reports[:i], t.outages.reports[i+1:]...)
			break
		}
	}
	t.outages.reports = append(t.outages.reports, st) // the newest report last
	t.showDetails(ctx)
}

// retrying is what status shows: the latest report of a call still waiting.
func (t *task) retrying() *Retrying {
	if n := len(t.outages.reports); n > 0 {
		r := t.outages.reports[n-1].Retrying
		return &r
	}
	return nil
}
