package tasksapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/internal/a2a"
	"github.com/agenttask/agenttask/internal/a2apush"
	"github.com/agenttask/agenttask/internal/taskdef"
)

// A2A push notifications (docs/a2a.md): the four configuration methods of
// A2A v1.0 over one follow workflow per A2A task (internal/a2apush), on
// the store's worker. Served when the API was given that worker
// (Config.PushWorker); otherwise the methods answer -32003.

// registerPush installs the follow workflow on the store's worker.
func (s *server) registerPush() {
	if s.cfg.PushWorker == nil {
		return
	}
	s.push = a2apush.NewSender(s.cfg.PushOptions)
	a2apush.Register(s.cfg.PushWorker, &a2apush.Activities{Sender: s.push, Read: func(ctx context.Context, taskID string) (a2a.Task, error) {
		id, turn, ok := parseA2ATaskID(taskID)
		if !ok {
			return a2a.Task{}, fmt.Errorf("%w: %q is no A2A task of ours", a2apush.ErrTaskGone, taskID)
		}
		// A run deleted (or gone past retention) ends the follow; any
		// other failure to read it is retried.
		var nf *serviceerror.NotFound
		if _, err := s.cfg.Store.C.DescribeWorkflowExecution(ctx, id, ""); errors.As(err, &nf) {
			return a2a.Task{}, fmt.Errorf("%w: %v", a2apush.ErrTaskGone, err)
		}
		return s.a2aExchange(ctx, id, turn)
	}})
}

// pushFollow is the follow workflow of an A2A task.
func (s *server) pushFollow(taskID string) string {
	return a2apush.WorkflowID(s.cfg.Store.Prefix, taskID)
}

// a2aPushMethod serves one of the configuration methods.
func (s *server) a2aPushMethod(ctx context.Context, d taskdef.Definition, method string, raw json.RawMessage) (any, error) {
	if s.push == nil {
		return nil, &a2a.RPCError{Code: a2a.CodePushNotSupported, Message: "push notifications are not served by this API: follow a task with SubscribeToTask or GetTask"}
	}
	var p struct {
		a2apush.Config
		PageSize int `json:"pageSize"`
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.TaskID == "" {
		return nil, &a2a.RPCError{Code: a2a.CodeInvalidParams, Message: `params name the task: {"taskId": "...", ...}`}
	}
	if _, err := s.a2aGet(ctx, d, p.TaskID); err != nil { // the caller's task, and ours
		return nil, err
	}
	switch method {
	case "CreateTaskPushNotificationConfig":
		return s.pushCreate(ctx, p.Config)
	case "GetTaskPushNotificationConfig":
		list, err := s.pushList(ctx, p.TaskID)
		for _, c := range list {
			if c.ID == p.ID {
				return c, nil
			}
		}
		if err == nil {
			err = &a2a.RPCError{Code: a2a.CodeTaskNotFound, Message: fmt.Sprintf("task %s has no push notification configuration %q", p.TaskID, p.ID)}
		}
		return nil, err
	case "ListTaskPushNotificationConfigs":
		list, err := s.pushList(ctx, p.TaskID)
		return map[string]any{"configs": list, "nextPageToken": ""}, err
	default: // DeleteTaskPushNotificationConfig
		err := s.cfg.Store.C.SignalWorkflow(ctx, s.pushFollow(p.TaskID), "", a2apush.SignalDelete, p.ID)
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			err = s.pushForget(ctx, p.TaskID, p.ID) // the follow ended: keep the others listed
		}
		if err != nil {
			return nil, &a2a.RPCError{Code: a2a.CodeInternalError, Message: err.Error()}
		}
		return map[string]any{}, nil
	}
}

// pushCreate checks c and hands it to the task's follow, started when none
// runs.
func (s *server) pushCreate(ctx context.Context, c a2apush.Config) (a2apush.Config, error) {
	if err := s.cfg.PushOptions.Check(ctx, c); err != nil {
		return c, &a2a.RPCError{Code: a2a.CodeInvalidParams, Message: err.Error()}
	}
	followed, err := s.pushFollowed(ctx, c.TaskID)
	if err != nil {
		return c, err
	}
	list := configsOf(followed)
	if c.ID == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		c.ID = "push-" + hex.EncodeToString(b)
	}
	replaces := false
	for _, x := range list {
		replaces = replaces || x.ID == c.ID
	}
	if len(list) >= a2apush.MaxConfigsPerTask && !replaces {
		return c, &a2a.RPCError{Code: a2a.CodeInvalidParams, Message: fmt.Sprintf("task %s has %d push notification configurations, the most it may have; delete one first", c.TaskID, len(list))}
	}
	_, err = s.cfg.Store.C.SignalWithStartWorkflow(ctx, s.pushFollow(c.TaskID), a2apush.SignalSet, c,
		client.StartWorkflowOptions{TaskQueue: s.cfg.Store.Queue, WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE},
		// When no follow runs (none yet, or the last ended with its task),
		// a new one starts with the configurations listed so far, each
		// with what it was sent.
		a2apush.WorkflowName, a2apush.State{TaskID: c.TaskID, Configs: followed})
	if err != nil {
		return c, &a2a.RPCError{Code: a2a.CodeInternalError, Message: err.Error()}
	}
	return c, nil
}

// pushList are the task's configurations (none when nothing follows it).
func (s *server) pushList(ctx context.Context, taskID string) ([]a2apush.Config, error) {
	f, err := s.pushFollowed(ctx, taskID)
	return configsOf(f), err
}

// pushFollowed are the task's configurations with what each was sent.
func (s *server) pushFollowed(ctx context.Context, taskID string) ([]a2apush.Followed, error) {
	v, err := s.cfg.Store.C.QueryWorkflow(ctx, s.pushFollow(taskID), "", a2apush.QueryConfigs)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, &a2a.RPCError{Code: a2a.CodeInternalError, Message: err.Error()}
	}
	var out []a2apush.Followed
	if err := v.Get(&out); err != nil {
		return nil, &a2a.RPCError{Code: a2a.CodeInternalError, Message: err.Error()}
	}
	return out, nil
}

func configsOf(f []a2apush.Followed) []a2apush.Config {
	out := make([]a2apush.Config, 0, len(f))
	for _, x := range f {
		out = append(out, x.Config)
	}
	return out
}

// pushForget drops configuration id of a task whose follow has ended: a
// run that sends nothing keeps the others for get and list.
func (s *server) pushForget(ctx context.Context, taskID, id string) error {
	list, err := s.pushFollowed(ctx, taskID)
	if err != nil {
		return err
	}
	st := a2apush.State{TaskID: taskID, Ended: true}
	for _, f := range list {
		if f.Config.ID != id {
			st.Configs = append(st.Configs, f)
		}
	}
	run, err := s.cfg.Store.C.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: s.pushFollow(taskID), TaskQueue: s.cfg.Store.Queue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE}, a2apush.WorkflowName, st)
	if err == nil {
		err = run.Get(ctx, nil) // it ends at once; then its list reads back
	}
	return err
}
