package a2apush

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/internal/a2a"
)

// One workflow follows one A2A task of ours for its push configurations
// (at most MaxConfigsPerTask): it reads the task with a short activity,
// posts each change to every webhook that has not seen it (artifacts first
// when the task ends, then its status), and sleeps on a timer between
// looks (2 s, doubling to a minute while nothing changes) or until a
// configuration is set or deleted. It ends with the task (or when no
// configuration is left); a webhook that refuses for good (HTTP 4xx) or
// stays down past its retries misses that change, not the next ones.

// Names (API: never renamed).
const (
	WorkflowName   = "agenttask.A2APushNotifications"
	SignalSet      = "a2a-push-set"
	SignalDelete   = "a2a-push-delete"
	QueryConfigs   = "a2a-push-configs"
	ReadTaskName   = "agenttask.A2APushReadTask"
	SendName       = "agenttask.A2APushSend"
	firstLook      = 2 * time.Second
	maxLook        = time.Minute
	continueAfter  = 2000 // history events: a task waiting days for input continues as new
	maxEventsBytes = 256 << 10
)

// WorkflowID is the follow of taskID (prefix: the API's project).
func WorkflowID(prefix, taskID string) string { return prefix + "a2a-push:" + taskID }

// Followed is a configuration and the last state its webhook was sent.
type Followed struct {
	Config Config `json:"config"`
	Sent   string `json:"sent,omitempty"`
}

// State is the workflow's argument and what continue-as-new carries.
type State struct {
	TaskID  string     `json:"task_id"`
	Configs []Followed `json:"configs,omitempty"`
	// Ended: the task's notifications were all sent; this run only keeps
	// its configurations for the get and list methods (one deleted after
	// the follow ended starts such a run).
	Ended bool `json:"ended,omitempty"`
}

// Reader reads one of our A2A tasks (the Tasks API's, by its ID).
type Reader func(ctx context.Context, taskID string) (a2a.Task, error)

// Activities read the task and post to webhooks.
type Activities struct {
	Read   Reader
	Sender *Sender
}

// SendInput is one post.
type SendInput struct {
	Config Config          `json:"config"`
	Body   json.RawMessage `json:"body"`
}

// Register adds the workflow and its activities to a worker.
func Register(r worker.Registry, a *Activities) {
	r.RegisterWorkflowWithOptions(Workflow, workflowOptions())
	r.RegisterActivityWithOptions(a.ReadTask, activityOptions(ReadTaskName))
	r.RegisterActivityWithOptions(a.Send, activityOptions(SendName))
}

// ErrTaskGone is a Reader's error for a task that no longer exists (its
// run deleted): the follow ends. Any other error is retried.
var ErrTaskGone = errors.New("the task no longer exists")

// ReadTask reads the task.
func (a *Activities) ReadTask(ctx context.Context, taskID string) (a2a.Task, error) {
	t, err := a.Read(ctx, taskID)
	if errors.Is(err, ErrTaskGone) {
		return t, temporal.NewNonRetryableApplicationError(err.Error(), taskGone, nil)
	}
	return t, err
}

const taskGone = "TASK_GONE"

// Send posts one notification.
func (a *Activities) Send(ctx context.Context, in SendInput) error {
	err := a.Sender.Send(ctx, in.Config, in.Body, time.Now())
	var perm *PermanentError
	if errors.As(err, &perm) {
		return temporal.NewNonRetryableApplicationError(err.Error(), "WEBHOOK_REFUSED", nil)
	}
	return err
}

var (
	readOptions = workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second, ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute}}
	sendOptions = workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second, ScheduleToCloseTimeout: 15 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 8}}
)

// Workflow follows st.TaskID for its webhooks.
func Workflow(ctx workflow.Context, st State) error {
	logger := workflow.GetLogger(ctx)
	if err := workflow.SetQueryHandler(ctx, QueryConfigs, func() ([]Followed, error) {
		return append([]Followed{}, st.Configs...), nil
	}); err != nil {
		return err
	}
	if st.Ended {
		return nil
	}
	sets := workflow.GetSignalChannel(ctx, SignalSet)
	deletes := workflow.GetSignalChannel(ctx, SignalDelete)
	// drain takes every signal already sent, without waiting; it says
	// whether a configuration was set (it may not have seen the task yet).
	drain := func() bool {
		set := false
		for {
			var cfg Config
			var id string
			switch {
			case sets.ReceiveAsync(&cfg):
				st.set(cfg)
				set = true
			case deletes.ReceiveAsync(&id):
				st.remove(id)
			default:
				return set
			}
		}
	}
	take := func(sel workflow.Selector) {
		sel.AddReceive(sets, func(c workflow.ReceiveChannel, _ bool) {
			var cfg Config
			c.Receive(ctx, &cfg)
			st.set(cfg)
		})
		sel.AddReceive(deletes, func(c workflow.ReceiveChannel, _ bool) {
			var id string
			c.Receive(ctx, &id)
			st.remove(id)
		})
	}
	look := firstLook
	for {
		drain()
		if len(st.Configs) == 0 && !drain() {
			return nil
		}
		var t a2a.Task
		rctx := workflow.WithActivityOptions(ctx, readOptions)
		if err := workflow.ExecuteActivity(rctx, ReadTaskName, st.TaskID).Get(ctx, &t); err != nil {
			var ae *temporal.ApplicationError
			if errors.As(err, &ae) && ae.Type() == taskGone {
				logger.Warn("the task is gone: its notifications end", "task", st.TaskID, "error", err)
				return nil
			}
			logger.Warn("the task could not be read: looking again later", "task", st.TaskID, "error", err)
			t.Status.State = "" // nothing new to send; the wait below, then another look
		} else if st.notify(ctx, t) {
			look = firstLook
		} else {
			look = min(2*look, maxLook)
		}
		if t.Terminal() && !drain() { // a configuration set meanwhile gets the end too
			return nil
		}
		if t.Terminal() {
			continue
		}
		if workflow.GetInfo(ctx).GetCurrentHistoryLength() > continueAfter {
			drain() // what was signalled goes on with the state
			return workflow.NewContinueAsNewError(ctx, WorkflowName, st)
		}
		sel := workflow.NewSelector(ctx)
		tctx, stop := workflow.WithCancel(ctx)
		sel.AddFuture(workflow.NewTimerWithOptions(tctx, look, workflow.TimerOptions{Summary: fmt.Sprintf("next look at %s in %s", st.TaskID, look)}), func(workflow.Future) {})
		take(sel)
		sel.Select(ctx)
		stop()
	}
}

// notify posts t's change to every webhook that has not seen its state,
// in order (artifacts before the status that ends the task); it says
// whether any had not.
func (st *State) notify(ctx workflow.Context, t a2a.Task) bool {
	body := events(t)
	sctx := workflow.WithActivityOptions(ctx, sendOptions)
	sent := false
	for i := range st.Configs {
		f := &st.Configs[i]
		if f.Sent == t.Status.State {
			continue
		}
		for _, b := range body {
			if err := workflow.ExecuteActivity(sctx, SendName, SendInput{Config: f.Config, Body: b}).Get(ctx, nil); err != nil {
				workflow.GetLogger(ctx).Warn("a notification was not delivered", "task", st.TaskID, "config", f.Config.ID, "error", err)
			}
		}
		f.Sent, sent = t.Status.State, true
	}
	return sent
}

// events are what a webhook is sent for t: its artifacts once it has
// ended, then its status, each a StreamResponse.
func events(t a2a.Task) []json.RawMessage {
	var out []json.RawMessage
	if t.Terminal() {
		for _, a := range t.Artifacts {
			b, _ := json.Marshal(map[string]any{"artifactUpdate": a2a.ArtifactUpdate{TaskID: t.ID, ContextID: t.ContextID, Artifact: a, LastChunk: true}})
			if len(b) <= maxEventsBytes {
				out = append(out, b)
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"statusUpdate": a2a.StatusUpdate{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status}})
	return append(out, b)
}

// set adds or replaces a configuration (by ID); past the bound the set is
// dropped (the API refuses it before).
func (st *State) set(c Config) {
	for i := range st.Configs {
		if st.Configs[i].Config.ID == c.ID {
			st.Configs[i] = Followed{Config: c}
			return
		}
	}
	if len(st.Configs) < MaxConfigsPerTask {
		st.Configs = append(st.Configs, Followed{Config: c})
	}
}

// remove drops configuration id.
func (st *State) remove(id string) {
	for i := range st.Configs {
		if st.Configs[i].Config.ID == id {
			st.Configs = append(st.Configs[:i], st.Configs[i+1:]...)
			return
		}
	}
}

func activityOptions(name string) activity.RegisterOptions {
	return activity.RegisterOptions{Name: name}
}

func workflowOptions() workflow.RegisterOptions { return workflow.RegisterOptions{Name: WorkflowName} }
