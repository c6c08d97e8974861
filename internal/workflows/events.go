package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/broker"
)

// What workflow code alone decides is streamed through the PublishEvents
// local activity (rules.streamEvents): an approval asked for and decided,
// a budget raised while a call waits, a turn canceled or failed in
// workflow code, the shaping pass's verdicts. Everything else a task
// streams is published by the activity that already carries it
// (docs/streaming-design.md). A local activity costs one marker in
// history, so only these rare moments pay; a replay does not run it, so
// nothing is published twice.

// stepAfterCalls positions an event after every model call of its turn:
// a model call of the turn still running (a zombie attempt) finds it at
// the tail and stops (broker.ErrStale).
const stepAfterCalls = 1 << 20

var publishOptions = workflow.LocalActivityOptions{
	ScheduleToCloseTimeout: 3 * time.Second,
	RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
}

// streams says whether this task's model calls stream (stream.go).
func (t *task) streams(ctx workflow.Context) bool {
	return streams(&t.args, t.rules, t.life.id(), workflow.GetInfo(ctx).ParentWorkflowExecution != nil)
}

// publish hands events to the worker's broker (rules.streamEvents, for a
// task that streams). It never fails the task: PublishEvents returns nil,
// and a local activity that times out is let go.
func (t *task) publish(ctx workflow.Context, events ...broker.Event) {
	if !t.rules.streamEvents || len(events) == 0 || !t.streams(ctx) {
		return
	}
	lctx := workflow.WithLocalActivityOptions(ctx, publishOptions)
	_ = workflow.ExecuteLocalActivity(lctx, activities.PublishEventsName,
		activities.PublishEventsInput{TaskID: t.life.id(), Events: events}).Get(lctx, nil)
}

// announceRequests publishes approval.requested for the approvals of p
// not announced yet: once per approval, however many runs its turn waits
// across.
func (t *task) announceRequests(ctx workflow.Context, p *pausedTurn) {
	if !t.rules.streamEvents {
		return
	}
	t.publish(ctx, approvalEvents(p, broker.TypeApprovalRequested, t.durable.announce(p.Approvals, false))...)
}

// announceDecisions publishes approval.decided for the decided approvals
// of p not announced yet.
func (t *task) announceDecisions(ctx workflow.Context, p *pausedTurn) {
	if !t.rules.streamEvents {
		return
	}
	t.publish(ctx, approvalEvents(p, broker.TypeApprovalDecided, t.durable.announce(p.Approvals, true))...)
}

// approvalEvents are events of type typ for approvals of p's turn and step.
func approvalEvents(p *pausedTurn, typ string, approvals []contract.Approval) []broker.Event {
	events := make([]broker.Event, len(approvals))
	for i, a := range approvals {
		events[i] = broker.WithData(broker.Event{Turn: p.Turn, Step: p.Step, Type: typ}, a)
	}
	return events
}

// announceDecisionsWhileWaiting publishes each decision as it comes while
// the turn waits (ctx ends the watch with the wait).
func (t *task) announceDecisionsWhileWaiting(ctx workflow.Context, p *pausedTurn) {
	if !t.rules.streamEvents {
		return
	}
	workflow.Go(ctx, func(gctx workflow.Context) {
		for {
			if err := workflow.Await(gctx, func() bool { return t.durable.toAnnounce(p.Approvals) }); err != nil {
				return
			}
			t.announceDecisions(gctx, p)
		}
	})
}

// announceTurnEnd publishes the end of a turn that workflow code ended (a
// cancel-turn, a closed task, a budget that stops it): no model call is
// left to say so.
func (t *task) announceTurnEnd(ctx workflow.Context, turn int, code, message string) {
	t.publish(ctx, broker.Event{Turn: turn, Step: stepAfterCalls, Type: broker.TypeError, Code: code, Message: message})
}

// announceRaise publishes a raise that lets a waiting call go on.
func (t *task) announceRaise(ctx workflow.Context, r contract.RaiseBudgetArgs, left contract.Amounts) {
	if !t.budget.waiting() {
		return // no call waits for it
	}
	t.publish(ctx, broker.WithData(broker.Event{Turn: t.durable.turns(), Type: broker.TypeBudgetRaised}, broker.BudgetRaised{Left: &left, By: r.By}))
}

// announceShaping publishes the shaping pass's verdict on one attempt.
func (t *task) announceShaping(ctx workflow.Context, attempt int, violations []contract.Violation) {
	v := broker.ShapingAttempt{Attempt: attempt, Fits: len(violations) == 0}
	for _, x := range violations {
		v.Violations = append(v.Violations, x.String())
	}
	t.publish(ctx, broker.WithData(broker.Event{Turn: max(t.durable.turns(), 1), Step: stepAfterCalls, Type: broker.TypeShapingAttempt}, v))
}
