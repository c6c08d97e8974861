package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
)

// watchIdle ends a conversation nobody has used for the idle timeout. One
// timer covers a whole idle period: it is not restarted per input (that
// would add two events to every turn); when it fires early it is re-armed
// for the rest of the period.
func (t *task) watchIdle(ctx workflow.Context) {
	for {
		last, _ := contract.ParseTime(t.durable.LastActivity)
		wait := last.Add(t.life.idle).Sub(workflow.Now(ctx))
		if wait <= 0 {
			if !t.turn.running && len(t.durable.Queue) == 0 && t.arrivals.checking == 0 {
				t.life.idleExpired = true
				// An input accepted in this same workflow task revives the
				// task (arrive() clears the flag): watch again.
				if err := workflow.Await(ctx, func() bool { return !t.life.idleExpired }); err != nil {
					return
				}
				continue
			}
			if t.rules.idleWaitsForWork {
				// Busy past the deadline: no timer until the work ends; the
				// turn's end starts the next idle period (LastActivity).
				if err := workflow.Await(ctx, func() bool { return !t.turn.running && len(t.durable.Queue) == 0 && t.arrivals.checking == 0 }); err != nil {
					return
				}
				continue
			}
			wait = t.life.idle
		}
		if err := t.newTimer(ctx, wait, "idle timeout "+shortDuration(t.life.idle)).Get(ctx, nil); err != nil {
			return
		}
	}
}
