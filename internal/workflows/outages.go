package workflows

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// Outages are waited out (rules.waitOutOutages). Model calls, the shaping
// pass and arrival checks retry without an attempt limit; the activity picks each
// delay and makes the failure final once the task's modelRetryTimeout has
// passed (internal/activities/retry.go). ScheduleToClose is only a backstop for
// attempts that never report (a worker dying on every attempt).
//
// Model calls heartbeat with a 30 s timeout: a slow frontend no longer
// cancels calls fleet-wide. The worker sends heartbeats at least every
// second (MaxHeartbeatThrottleInterval), so cancel-turn still reaches a call
// within about two seconds.

// outages are the activity calls running now (by their retry name) and
// the last report of each that waits out an outage, newest last.
type outages struct {
	calls     map[string]bool
	reports   []retryState
	recovered func()
}

// waitOut is how this run's calls wait out an outage: under
// rules.waitOutOutages (on), for up to the task's modelRetryTimeout.
type waitOut struct {
	on      bool
	timeout time.Duration
}

// waitOut is this run's: its rules, its start argument's modelRetryTimeout.
func (t *task) waitOut() waitOut {
	return waitOut{on: t.rules.waitOutOutages, timeout: t.args.retryTimeout()}
}

// options returns base (a call's options) as rules.waitOutOutages
// runs it: the same retry policy without an attempt limit and with waits up
// to a minute, a backstop of modelRetryTimeout plus one attempt, and heartbeat, when set,
// as the heartbeat timeout. Older rules keep base as it is.
func (w waitOut) options(base workflow.ActivityOptions, heartbeat time.Duration) workflow.ActivityOptions {
	if !w.on {
		return base
	}
	o := base
	if heartbeat > 0 {
		o.HeartbeatTimeout = heartbeat
	}
	o.ScheduleToCloseTimeout = w.timeout + o.StartToCloseTimeout
	p := *base.RetryPolicy
	p.MaximumAttempts, p.MaximumInterval = 0, time.Minute
	o.RetryPolicy = &p
	return o
}

// retry names a call for its retry reports; "" on older rules (no reports,
// the retry policy's attempt limit applies).
func (w waitOut) retry(call string) activities.Retry {
	if !w.on {
		return activities.Retry{}
	}
	return activities.Retry{Call: call, Timeout: w.timeout.String()}
}

// waiting marks a call as running until the returned func is called: only
// running calls are shown as retrying.
func (o *outages) waiting(call string) func() {
	o.begin(call)
	return func() {
		if o.end(call) {
			o.recovered() // no longer retrying
		}
	}
}

// start readies the run's outages: no call runs yet; recovered is called
// when a call shown as retrying is done.
func (o *outages) start(recovered func()) { o.calls, o.recovered = map[string]bool{}, recovered }

// begin marks a call as running.
func (o *outages) begin(call string) { o.calls[call] = true }

// end marks a call as done, forgetting its last report; it says whether
// it had one (it was shown as retrying).
func (o *outages) end(call string) bool {
	delete(o.calls, call)
	for i, r := range o.reports {
		if r.call == call {
			o.reports = append(o.reports[:i], o.reports[i+1:]...)
			return true
		}
	}
	return false
}

// running says whether the call named call runs now.
func (o *outages) running(call string) bool { return o.calls[call] }

// retryState is the last report of a call that waits out an outage.
type retryState struct {
	call string
	contract.Retrying
}

// onRetrying takes a report from an activity that is waiting out an
// outage; false for a late report, or not one of ours: nothing is waiting.
func (o *outages) onRetrying(raw converter.RawValue) bool {
	data, err := payloadJSON(raw)
	var r activities.RetryReport
	return err == nil && json.Unmarshal(data, &r) == nil && o.report(r)
}

// report keeps a running call's report, the newest last; it says false for
// a late report, or one not of this run's calls.
func (o *outages) report(r activities.RetryReport) bool {
	if !o.calls[r.Call] {
		return false
	}
	st := retryState{call: r.Call, Retrying: contract.Retrying{Type: r.Type, Message: r.Message, Attempts: r.Attempts, Since: r.At, NextAt: r.NextAt}}
	for i, old := range o.reports {
		if old.call == r.Call {
			st.Since = old.Since // the outage began at the first report
			o.reports = append(o.reports[:i], o.reports[i+1:]...)
			break
		}
	}
	o.reports = append(o.reports, st) // the newest report last
	return true
}

// retrying is what status shows: the latest report of a call still waiting.
func (o *outages) retrying() *contract.Retrying {
	if n := len(o.reports); n > 0 {
		r := o.reports[n-1].Retrying
		return &r
	}
	return nil
}
