package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/a2a"
	"github.com/agenttask/agenttask/internal/activities"
)

// Remote agents (rules.a2aAgents). An a2a capability names an agent the
// worker's operator lists; a call of it follows one remote task:
//
//   - SendA2AMessage sends the model's message and returns with the task
//     at once (returnImmediately);
//   - while the remote task works, the workflow sleeps on a timer (5 s,
//     doubling to a minute) between short GetA2ATask activities, so a
//     remote task of hours holds no activity open and costs a few events
//     a minute at most;
//   - TASK_STATE_INPUT_REQUIRED is a question for our user: it waits as
//     an approval does (listed by approvals with its question; decide's
//     "result" is the reply sent to the remote task, refusing cancels it);
//   - the call ends when the remote task does, or at the capability's
//     timeout; a cancel-turn, a close or the timeout cancel the remote
//     task (CancelA2ATask).

const (
	a2aFirstPoll = 5 * time.Second
	a2aMaxPoll   = time.Minute
)

var (
	a2aStepOptions = workflow.ActivityOptions{StartToCloseTimeout: 2 * time.Minute} // one request and the card's, 30 s each at most
	a2aRetry       = temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		NonRetryableErrorTypes: []string{contract.ErrInvalidInput}} // attempts: until the call's deadline
	a2aCancelOptions = workflow.ActivityOptions{StartToCloseTimeout: time.Minute, ScheduleToCloseTimeout: 3 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3}}
)

// a2aArgs are an a2a call's arguments.
type a2aArgs struct {
	Message string `json:"message"`
}

// a2aCall is one call of a remote agent, as the workflow follows it.
type a2aCall struct {
	t         *task
	c         contract.Capability
	call      activities.ToolCall
	turn      int
	modelStep int       // the turn's model call that made it: its events' place
	id        string    // "<task>-t<turn>-c<n>": its messages' IDs start so
	segment   string    // "t<turn>.c<n>": its questions' approval IDs start so
	deadline  time.Time // the capability's timeout, from the call's start
	sent      int       // messages sent
	asked     int       // questions the remote task asked
	replied   bool      // the last step sent a reply to a question
	remote    activities.A2ATaskView
}

// runA2A calls the remote agent of c and returns its answer.
func (t *task) runA2A(ctx workflow.Context, turn, idx, step int, segment string, c contract.Capability, call activities.ToolCall) (string, error) {
	var args a2aArgs
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil || strings.TrimSpace(args.Message) == "" {
		return "", errors.New(`the arguments must be {"message": "..."}: what to ask or tell the remote agent`)
	}
	x := &a2aCall{t: t, c: c, call: call, turn: turn, modelStep: step, segment: segment,
		id: fmt.Sprintf("%s-t%d-c%d", t.life.id(), turn, idx), deadline: workflow.Now(ctx).Add(c.CallWait())}
	answer, err := x.follow(ctx, args.Message)
	if err != nil && x.remote.TaskID != "" && !x.ended() {
		x.cancelRemote(ctx) // a cancel-turn, a close, the timeout: the remote task stops too
	}
	return answer, err
}

// follow sends message and follows the remote task to its end.
func (x *a2aCall) follow(ctx workflow.Context, message string) (string, error) {
	if err := x.step(ctx, activities.SendA2AMessageName, message); err != nil {
		return "", err
	}
	wait := a2aFirstPoll
	for {
		switch x.remote.State {
		case a2a.StateCompleted:
			return x.remote.Answer, nil
		case a2a.StateFailed, a2a.StateRejected, a2a.StateCanceled:
			return "", x.endedWithout()
		case a2a.StateInputRequired, a2a.StateAuthRequired:
			if x.replied {
				break // the answer to the reply may predate it: look again before asking anew
			}
			x.asked++
			reply, err := x.askPerson(ctx, x.asked)
			if err != nil {
				return "", err
			}
			if err := x.step(ctx, activities.SendA2AMessageName, reply); err != nil {
				return "", err
			}
			x.replied = true
			wait = a2aFirstPoll
			continue
		}
		if x.t.durable.closing() {
			return "", fmt.Errorf("the task was closed while the agent %q worked; its task was canceled", x.c.RemoteAgent)
		}
		left := x.deadline.Sub(workflow.Now(ctx))
		if left <= 0 {
			return "", fmt.Errorf("TIMEOUT: the agent %q did not finish within %s (the capability's timeout); its task was canceled", x.c.RemoteAgent, x.c.CallWait())
		}
		// A timer between looks; a close ends the wait at once.
		d := min(wait, left)
		summary := fmt.Sprintf("A2A %s · %s · next look in %s", x.c.RemoteAgent, x.remote.State, shortDuration(d))
		if _, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{Timeout: d, TimerOptions: workflow.TimerOptions{Summary: summary}}, x.t.durable.closing); err != nil {
			return "", err
		}
		if x.t.durable.closing() {
			continue // answered above
		}
		wait = min(2*wait, a2aMaxPoll)
		if err := x.step(ctx, activities.GetA2ATaskName, ""); err != nil {
			return "", err
		}
		x.replied = false
	}
}

// step runs one short activity (a send when text is set, else a read) and
// keeps what it saw of the remote task.
func (x *a2aCall) step(ctx workflow.Context, name, text string) error {
	left := x.deadline.Sub(workflow.Now(ctx))
	if left <= 0 {
		return fmt.Errorf("TIMEOUT: the agent %q did not finish within %s (the capability's timeout)", x.c.RemoteAgent, x.c.CallWait())
	}
	in := activities.A2ACall{Agent: x.c.RemoteAgent, TaskID: x.remote.TaskID, ContextID: x.remote.ContextID,
		Retry: activities.Retry{Call: x.segment + ":a2a", Timeout: left.String()}}
	if name == activities.SendA2AMessageName {
		x.sent++
		in.MessageID, in.Text = fmt.Sprintf("%s-m%d", x.id, x.sent), text
	}
	p := a2aRetry
	o := a2aStepOptions
	o.RetryPolicy, o.ScheduleToCloseTimeout = &p, left+time.Minute // the retry timeout ends it first; a backstop
	o.Summary = fmt.Sprintf("A2A %s · %s", x.c.RemoteAgent, strings.TrimPrefix(name, "agenttask."))
	var view activities.A2ATaskView
	// A close ends a step that waits out an outage at once, not at the
	// call's deadline.
	sctx, stop := workflow.WithCancel(ctx)
	workflow.Go(sctx, func(g workflow.Context) {
		if workflow.Await(g, x.t.durable.closing) == nil {
			stop()
		}
	})
	done := x.t.outages.waiting(in.Retry.Call)
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(sctx, o), name, in).Get(sctx, &view)
	done()
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if x.t.durable.closing() {
			return fmt.Errorf("the task was closed while the agent %q was being reached", x.c.RemoteAgent)
		}
		return fmt.Errorf("the agent %q could not be reached: %s", x.c.RemoteAgent, truncate(contract.MessageOf(unwrapActivityError(err)), 2_000))
	}
	if view.Refused != "" {
		return errors.New(view.Refused)
	}
	if view.TaskID == "" { // a message alone answered: nothing to follow
		view.TaskID = x.remote.TaskID
	}
	x.remote = view
	return nil
}

// ended: the remote task is in a state that ends it.
func (x *a2aCall) ended() bool {
	return (a2a.Task{Status: a2a.Status{State: x.remote.State}}).Terminal()
}

// endedWithout says how the remote task ended without an answer.
func (x *a2aCall) endedWithout() error {
	how := map[string]string{a2a.StateFailed: "failed", a2a.StateRejected: "rejected", a2a.StateCanceled: "canceled"}[x.remote.State]
	msg := fmt.Sprintf("the agent %q %s the task", x.c.RemoteAgent, how)
	if x.remote.Message != "" {
		msg += ": " + x.remote.Message
	}
	return errors.New(msg)
}

// cancelRemote asks the remote agent to cancel its task, on a context of
// its own (the turn's may be canceled already); a refusal is logged.
func (x *a2aCall) cancelRemote(ctx workflow.Context) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	o := a2aCancelOptions
	o.Summary = fmt.Sprintf("A2A %s · CancelA2ATask", x.c.RemoteAgent)
	in := activities.A2ACall{Agent: x.c.RemoteAgent, TaskID: x.remote.TaskID, ContextID: x.remote.ContextID}
	var view activities.A2ATaskView
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, o), activities.CancelA2ATaskName, in).Get(dctx, &view)
	x.t.logger.Info("remote task canceled", "agent", x.c.RemoteAgent, "remote_task", x.remote.TaskID, "state", view.State, "refused", view.Refused, "error", err)
}

// askPerson turns what the remote task asks into an approval of ours and
// waits for its decision: approved, the reply is decide's result (or,
// without one, "Approved." and the reason); refused, timed out, a
// cancel-turn or a close end the call.
func (x *a2aCall) askPerson(ctx workflow.Context, seq int) (string, error) {
	t := x.t
	now := workflow.Now(ctx)
	question := x.remote.Message
	if question == "" {
		question = fmt.Sprintf("The agent %q needs input (%s) and said nothing more.", x.c.RemoteAgent, x.remote.State)
	}
	args := json.RawMessage(x.call.Arguments)
	if !json.Valid(args) {
		args, _ = json.Marshal(x.call.Arguments)
	}
	r := approvalRecord{Approval: contract.Approval{ID: fmt.Sprintf("%s.i%d", x.segment, seq), Capability: x.c.Name,
		Arguments: json.RawMessage(t.secrets().mask(string(args))), Turn: x.turn, RequestedAt: contract.FormatTime(now),
		CallID: x.call.ID, Question: t.secrets().mask(question)}}
	// The question waits its approvalTimeout, and never past the call's
	// own timeout (a reply then could not be sent).
	wait := x.c.ApprovalWait()
	if left := x.deadline.Sub(now); wait <= 0 || left < wait {
		wait = max(left, 0)
	}
	r.Deadline = contract.FormatTime(now.Add(wait))
	t.durable.Approvals = append(t.durable.Approvals, r)
	id := r.ID
	gaugeApprovals(ctx, t.life.id(), t.durable.pendingApprovals())
	t.logger.Info("remote agent asks", "approval", id, "capability", x.c.Name)
	p := &pausedTurn{Turn: x.turn, Step: x.modelStep, Approvals: []string{id}}
	was := t.life.enter(contract.StateAwaitingApproval)
	t.showDetails(ctx)
	t.announceRequests(ctx, p)
	defer func() {
		dctx, _ := workflow.NewDisconnectedContext(ctx) // a cancel-turn's decision is streamed too
		t.announceDecisions(dctx, p)
		t.life.enter(was)
		t.showDetails(ctx)
	}()
	wctx, stop := workflow.WithCancel(ctx)
	defer stop()
	workflow.Go(wctx, func(gctx workflow.Context) {
		if wait > 0 && t.rules.newTimer(gctx, wait, "approval timeout "+shortDuration(wait)+" · "+id).Get(gctx, nil) != nil {
			return
		}
		if a := t.durable.approval(id); a != nil && a.Decision == nil {
			t.durable.decide(ctx, a, contract.Decision{Reason: contract.ReasonApprovalTimedOut}, t.life.id(), t.logger)
		}
	})
	decided := func() bool { a := t.durable.approval(id); return a == nil || a.Decision != nil }
	if err := workflow.Await(ctx, func() bool { return decided() || t.durable.closing() }); err != nil {
		t.durable.denyPending(ctx, x.turn, contract.ReasonTurnCanceled, t.life.id(), t.logger)
		return "", err
	}
	if !decided() {
		t.durable.denyPending(ctx, x.turn, contract.ReasonTaskClosed, t.life.id(), t.logger)
	}
	a := t.durable.approval(id)
	if a == nil || !a.Decision.Approve {
		return "", x.refused(a)
	}
	if reply := a.takeResult(); reply != "" {
		return reply, nil
	}
	reply := "Approved."
	if a.Decision.Reason != "" {
		reply += " " + a.Decision.Reason
	}
	return reply, nil
}

// refused says why a question was not answered.
func (x *a2aCall) refused(a *approvalRecord) error {
	why := "a person refused to answer"
	if a != nil && a.Decision.Reason != "" {
		why += " (" + a.Decision.Reason + ")"
	}
	if a != nil && (a.Decision.Reason == contract.ReasonApprovalTimedOut || a.Decision.Reason == contract.ReasonTaskClosed || a.Decision.Reason == contract.ReasonTurnCanceled) {
		why = "no answer came (" + a.Decision.Reason + ")"
	}
	return fmt.Errorf("the agent %q asked the user something, and %s; its task was canceled", x.c.RemoteAgent, why)
}
