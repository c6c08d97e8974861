package tasksapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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
			return a2a.Task{}, &a2a.RPCError{Code: a2a.CodeTaskNotFound, Message: fmt.Sprintf("no task %q", taskID)}
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
		if _, gone := err.(*serviceerror.NotFound); gone {
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
	list, err := s.pushList(ctx, c.TaskID)
	if err != nil {
		return c, err
	}
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
		a2apush.WorkflowName, a2apush.State{TaskID: c.TaskID})
	if err != nil {
		return c, &a2a.RPCError{Code: a2a.CodeInternalError, Message: err.Error()}
	}
	return c, nil
}

// pushList are the task's configurations (none when nothing follows it).
func (s *server) pushList(ctx context.Context, taskID string) ([]a2apush.Config, error) {
	v, err := s.cfg.Store.C.QueryWorkflow(ctx, s.pushFollow(taskID), "", a2apush.QueryConfigs)
	if _, gone := err.(*serviceerror.NotFound); gone {
		return []a2apush.Config{}, nil
	}
	if err != nil {
		return nil, &a2a.RPCError{Code: a2a.CodeInternalError, Message: err.Error()}
	}
	out := []a2apush.Config{}
	if err := v.Get(&out); err != nil {
		return nil, &a2a.RPCError{Code: a2a.CodeInternalError, Message: err.Error()}
	}
	return out, nil
}

// pushForget drops configuration id of a task whose follow has ended: a
// run that sends nothing keeps the others for get and list.
func (s *server) pushForget(ctx context.Context, taskID, id string) error {
	list, err := s.pushList(ctx, taskID)
	if err != nil {
		return err
	}
	st := a2apush.State{TaskID: taskID, Ended: true}
	for _, c := range list {
		if c.ID != id {
			st.Configs = append(st.Configs, a2apush.Followed{Config: c})
		}
	}
	run, err := s.cfg.Store.C.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: s.pushFollow(taskID), TaskQueue: s.cfg.Store.Queue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE}, a2apush.WorkflowName, st)
	if err == nil {
		err = run.Get(ctx, nil) // it ends at once; then its list reads back
	}
	return err
}
