package definitions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// DefaultPrefix starts the store's workflow IDs.
const DefaultPrefix = "agenttask-api/"

// Register registers the store's workflows under their API names (on a
// worker, or on a replayer).
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(TaskIndex, workflow.RegisterOptions{Name: IndexWorkflow})
	r.RegisterWorkflowWithOptions(TaskDefinition, workflow.RegisterOptions{Name: TaskWorkflow})
	r.RegisterWorkflowWithOptions(Prompt, workflow.RegisterOptions{Name: PromptWorkflow})
	r.RegisterWorkflowWithOptions(PromptVersionEntity, workflow.RegisterOptions{Name: PromptVersionWorkflow})
}

// Store reads and changes the stored prompts and tasks of one project (the
// client's namespace). Its workflows run on Queue (a worker with Register).
type Store struct {
	C      client.Client
	Queue  string
	Prefix string // DefaultPrefix unless tests keep projects apart
}

// Error is a refusal of the store, typed with one of the Code constants.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// asStoreError turns a workflow's typed refusal into an *Error.
func asStoreError(err error) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Type() != "" {
		return &Error{Code: ae.Type(), Message: ae.Message()}
	}
	return err
}

func notFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// updateWithStart sends an update to an entity, starting it with args if it
// does not run.
func (s *Store) updateWithStart(ctx context.Context, id, wf string, args any, update string, arg any, out any) error {
	op := s.C.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: id, TaskQueue: s.Queue, WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, wf, args)
	h, err := s.C.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: op,
		UpdateOptions:          client.UpdateWorkflowOptions{UpdateName: update, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	if err != nil {
		return asStoreError(err)
	}
	return asStoreError(h.Get(ctx, out))
}

func (s *Store) update(ctx context.Context, id, update string, arg any, out any) error {
	h, err := s.C.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: update, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return asStoreError(err)
	}
	return asStoreError(h.Get(ctx, out))
}

func (s *Store) query(ctx context.Context, id, query string, out any) error {
	v, err := s.C.QueryWorkflow(ctx, id, "", query)
	if err != nil {
		return err
	}
	return v.Get(out)
}

// CreateTask stores a new task: its name is reserved in the index first, so
// of two creations of one name only one succeeds (task_exists), and a
// project never holds more than MaxTasks (task_limit).
func (s *Store) CreateTask(ctx context.Context, name string, def json.RawMessage, by string) (Stored, error) {
	// Once the name is reserved the sequence runs to its end whatever the
	// caller does, so the index and the entities stay in step.
	ctx = context.WithoutCancel(ctx)
	if err := s.reserve(ctx, name); err != nil {
		return Stored{}, err
	}
	// The entity starts and takes its definition in one call: the reply
	// comes from its first workflow task.
	op := s.C.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: taskID(s.Prefix, name), TaskQueue: s.Queue, WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
	}, TaskWorkflow, TaskState{Name: name, Stored: Stored{CreatedBy: by}})
	h, err := s.C.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: op,
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: UpdatePut, Args: []any{Change{Definition: def, By: by}},
			WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	var st Stored
	if err == nil {
		err = h.Get(ctx, &st)
	}
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return Stored{}, &Error{Code: CodeTaskExists, Message: fmt.Sprintf("a task named %q exists", name)}
		}
		if _, derr := s.C.DescribeWorkflowExecution(ctx, taskID(s.Prefix, name), ""); notFound(derr) {
			_ = s.update(ctx, indexID(s.Prefix), UpdateReleaseTask, name, nil) // never started: give the name back
		}
		return Stored{}, asStoreError(err)
	}
	return st, nil
}

// reserve takes a task name in the index. A name the index holds without a
// live task (a creation or deletion cut short) is freed and taken again.
func (s *Store) reserve(ctx context.Context, name string) error {
	err := s.updateWithStart(ctx, indexID(s.Prefix), IndexWorkflow, IndexState{}, UpdateReserveTask, name, nil)
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeTaskExists {
		return err
	}
	if _, gerr := s.GetTask(ctx, name); !errors.As(gerr, &se) || se.Code != CodeTaskNotFound {
		return err // a live task holds it
	}
	if err := s.update(ctx, indexID(s.Prefix), UpdateReleaseTask, name, nil); err != nil {
		return err
	}
	return s.updateWithStart(ctx, indexID(s.Prefix), IndexWorkflow, IndexState{}, UpdateReserveTask, name, nil)
}

// GetTask reads a task (task_not_found when there is none).
func (s *Store) GetTask(ctx context.Context, name string) (Stored, error) {
	var st Stored
	err := s.query(ctx, taskID(s.Prefix, name), QueryGet, &st)
	if notFound(err) || (err == nil && st.Deleted) {
		return Stored{}, &Error{Code: CodeTaskNotFound, Message: fmt.Sprintf("no task named %q", name)}
	}
	return st, err
}

// ListTasks reads every task, sorted by name.
func (s *Store) ListTasks(ctx context.Context) ([]string, []Stored, error) {
	names, err := s.TaskNames(ctx)
	if err != nil {
		return nil, nil, err
	}
	var outNames []string
	var out []Stored
	for _, n := range names {
		st, err := s.GetTask(ctx, n)
		var se *Error
		if errors.As(err, &se) && se.Code == CodeTaskNotFound {
			continue // being created or deleted
		}
		if err != nil {
			return nil, nil, err
		}
		outNames, out = append(outNames, n), append(out, st)
	}
	return outNames, out, nil
}

// TaskNames are the stored tasks' names, from the index alone (one query;
// a name may belong to a task being created or deleted).
func (s *Store) TaskNames(ctx context.Context) ([]string, error) {
	var names []string
	if err := s.query(ctx, indexID(s.Prefix), QueryTasks, &names); err != nil && !notFound(err) {
		return nil, err
	}
	return names, nil
}

// PutTask replaces a task's definition.
func (s *Store) PutTask(ctx context.Context, name string, def json.RawMessage, by string) (Stored, error) {
	var st Stored
	err := s.update(ctx, taskID(s.Prefix, name), UpdatePut, Change{Definition: def, By: by}, &st)
	if notFound(err) {
		return Stored{}, &Error{Code: CodeTaskNotFound, Message: fmt.Sprintf("no task named %q", name)}
	}
	return st, err
}

// DeleteTask deletes a task and frees its name.
func (s *Store) DeleteTask(ctx context.Context, name, by string) error {
	ctx = context.WithoutCancel(ctx) // the entity and the index change together
	err := s.update(ctx, taskID(s.Prefix, name), UpdateDelete, Change{By: by}, nil)
	var se *Error
	if notFound(err) || (errors.As(err, &se) && se.Code == CodeTaskNotFound) {
		_ = s.update(ctx, indexID(s.Prefix), UpdateReleaseTask, name, nil) // a name left over by a cut-short deletion
		return &Error{Code: CodeTaskNotFound, Message: fmt.Sprintf("no task named %q", name)}
	}
	if err != nil {
		return err
	}
	return s.update(ctx, indexID(s.Prefix), UpdateReleaseTask, name, nil)
}

// AddPromptVersion stores a new version of a prompt (creating the prompt).
func (s *Store) AddPromptVersion(ctx context.Context, name, text string, variables []string, by string) (PromptVersion, error) {
	var v PromptVersion
	if err := s.updateWithStart(ctx, indexID(s.Prefix), IndexWorkflow, IndexState{}, UpdateAddPrompt, name, nil); err != nil {
		return v, err
	}
	err := s.updateWithStart(ctx, promptID(s.Prefix, name), PromptWorkflow, PromptState{Name: name, Prefix: s.Prefix},
		UpdateAddVersion, NewVersion{Text: text, Variables: variables, By: by}, &v)
	return v, err
}

// ListPrompts reads every prompt (without texts), sorted by name.
func (s *Store) ListPrompts(ctx context.Context) ([]PromptInfo, error) {
	var names []string
	if err := s.query(ctx, indexID(s.Prefix), QueryPrompts, &names); err != nil && !notFound(err) {
		return nil, err
	}
	out := []PromptInfo{}
	for _, n := range names {
		p, err := s.GetPrompt(ctx, n)
		if err != nil {
			var se *Error
			if errors.As(err, &se) && se.Code == CodePromptNotFound {
				continue // its first version is being written
			}
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// GetPrompt reads a prompt and its versions (prompt_not_found when none).
func (s *Store) GetPrompt(ctx context.Context, name string) (PromptInfo, error) {
	var p PromptInfo
	err := s.query(ctx, promptID(s.Prefix, name), QueryGet, &p)
	if notFound(err) || (err == nil && p.LatestVersion == 0) {
		return p, &Error{Code: CodePromptNotFound, Message: fmt.Sprintf("no prompt named %q", name)}
	}
	return p, err
}

// GetPromptVersion reads one version with its text.
func (s *Store) GetPromptVersion(ctx context.Context, name string, version int) (PromptVersion, error) {
	var v PromptVersion
	err := s.query(ctx, versionID(s.Prefix, name, version), QueryGet, &v)
	if notFound(err) {
		return v, &Error{Code: CodePromptNotFound, Message: fmt.Sprintf("prompt %q has no version %d", name, version)}
	}
	return v, err
}
