package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
)

// lifecycle is where the task is in its life: what status shows and what
// ends it.
type lifecycle struct {
	// taskID is the workflow ID: the task's file space and log field (the
	// transcript may be an earlier task's, when this one continues it).
	taskID  string
	state   contract.State
	err     *contract.ErrorInfo // why the task failed
	endedBy string              // how it completed
	// idle is the idle timeout; expired says it passed with nothing to do.
	idle    time.Duration
	expired bool
	// agentState is the AgentState search attribute's value ("" when the
	// start did not set it: never upserted); root is the run's context,
	// which upserts it (operator.go).
	agentState string
	root       workflow.Context
}

// start names the run's task and takes the AgentState it started with.
func (l *lifecycle) start(ctx workflow.Context) {
	l.taskID = workflow.GetInfo(ctx).WorkflowExecution.ID
	l.root, l.agentState = ctx, knownAgentState(ctx)
}

// id is the task's ID (its workflow ID).
func (l *lifecycle) id() string { return l.taskID }

// current is the state status shows.
func (l *lifecycle) current() contract.State { return l.state }

// enter moves the task to state s and returns the state it left.
func (l *lifecycle) enter(s contract.State) contract.State {
	prev := l.state
	l.state = s
	return prev
}

// ended says the task completed, failed or was canceled.
func (l *lifecycle) ended() bool {
	return l.state == contract.StateCompleted || l.state == contract.StateFailed || l.state == contract.StateCanceled
}

// completed ends the task successfully, endedBy saying how.
func (l *lifecycle) completed(endedBy string) { l.state, l.endedBy = contract.StateCompleted, endedBy }

// failed ends the task with info as its error.
func (l *lifecycle) failed(info *contract.ErrorInfo) { l.state, l.err = contract.StateFailed, info }

// failure is why the task failed (nil unless it did).
func (l *lifecycle) failure() *contract.ErrorInfo { return l.err }

// endedHow is how the task completed ("" before it did).
func (l *lifecycle) endedHow() string { return l.endedBy }

// setIdle takes the idle timeout: the default, or the start argument's
// (checked by DecodeStart).
func (l *lifecycle) setIdle(timeout string) {
	l.idle = contract.DefaultIdleTimeout
	if timeout != "" {
		l.idle, _ = time.ParseDuration(timeout)
	}
}

// idleTimeout is how long the task waits with nothing to do.
func (l *lifecycle) idleTimeout() time.Duration { return l.idle }

// expire notes the idle timeout passed with nothing to do.
func (l *lifecycle) expire() { l.expired = true }

// idleExpired says the idle timeout passed with nothing to do.
func (l *lifecycle) idleExpired() bool { return l.expired }

// revive: an input arrived, so the idle timeout has not passed.
func (l *lifecycle) revive() { l.expired = false }

// trackedAgentState is the AgentState last upserted ("" when the start
// did not set it: never upserted).
func (l *lifecycle) trackedAgentState() string { return l.agentState }

// agentStateUpserted records the AgentState just upserted.
func (l *lifecycle) agentStateUpserted(s string) { l.agentState = s }

// rootContext is the run's context: what upserts and timers outside a
// handler's coroutine use.
func (l *lifecycle) rootContext() workflow.Context { return l.root }

// accepting says whether the task takes another input, and why not.
func (l *lifecycle) accepting(c *Carry, mode contract.Mode) error {
	switch {
	case l.ended():
		return &contract.Error{Type: contract.ErrTaskClosed, Message: fmt.Sprintf("the task has %s and takes no more inputs; start a new task", l.state)}
	case c.closing() || c.finished() || l.state == contract.StateShaping:
		return &contract.Error{Type: contract.ErrTaskClosed, Message: "the task is closing: inputs already received are being answered, new ones are refused; start a new task"}
	case mode == contract.ModeSingle && c.turns() > 0:
		return &contract.Error{Type: contract.ErrTaskClosed, Message: "a single-mode task answers one turn and takes no further inputs; start a new task, or use mode \"conversation\""}
	}
	return nil
}
