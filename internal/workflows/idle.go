package workflows

import (
	"go.temporal.io/sdk/workflow"
)

// watchIdle ends a conversation nobody has used for the idle timeout. One
// timer covers a whole idle period: it is not restarted per input (that
// would add two events to every turn); when it fires early it is re-armed
// for the rest of the period.
func (t *task) watchIdle(ctx workflow.Context) {
	for {
		wait := t.durable.idleSince().Add(t.life.idleTimeout()).Sub(workflow.Now(ctx))
		if wait <= 0 {
			if !t.turn.busy() && t.durable.queued() == 0 && !t.arrivals.busy() {
				t.life.expire()
				// An input accepted in this same workflow task revives the
				// task (arrive() clears the flag): watch again.
				if err := workflow.Await(ctx, func() bool { return !t.life.idleExpired() }); err != nil {
					return
				}
				continue
			}
			if t.rules.idleWaitsForWork {
				// Busy past the deadline: no timer until the work ends; the
				// turn's end starts the next idle period (LastActivity).
				if err := workflow.Await(ctx, func() bool { return !t.turn.busy() && t.durable.queued() == 0 && !t.arrivals.busy() }); err != nil {
					return
				}
				continue
			}
			wait = t.life.idleTimeout()
		}
		if err := t.rules.newTimer(ctx, wait, "idle timeout "+shortDuration(t.life.idleTimeout())).Get(ctx, nil); err != nil {
			return
		}
	}
}
