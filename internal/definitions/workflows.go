package definitions

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	enumspb "go.temporal.io/api/enums/v1"
)

// historyLimit continues an entity as new long before Temporal would suggest
// it: its state is small, its history only grows with changes.
const historyLimit = 2000

// stamp is a stored time: UTC, to the second, as the seed writes them.
func stamp(ctx workflow.Context) string {
	return workflow.Now(ctx).UTC().Truncate(time.Second).Format(time.RFC3339)
}

// due says an entity should continue as new (checked between changes).
func due(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= historyLimit
}

// continueWhenDue waits until the entity should continue as new (or stop
// is true), then lets running handlers finish.
func continueWhenDue(ctx workflow.Context, stop func() bool) error {
	if err := workflow.Await(ctx, func() bool { return stop() || due(ctx) }); err != nil {
		return err
	}
	return workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
}

// IndexState is the project's names, sorted.
type IndexState struct {
	Tasks   []string `json:"tasks"`
	Prompts []string `json:"prompts"`
}

// TaskIndex holds the project's task names (unique, at most MaxTasks) and
// prompt names. Updates run one after another, so two creations of one name
// at once reserve it once: the second is refused by the validator.
func TaskIndex(ctx workflow.Context, st IndexState) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateReserveTask, func(ctx workflow.Context, name string) error {
		st.Tasks = insertSorted(st.Tasks, name)
		return nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, name string) error {
		if _, found := slices.BinarySearch(st.Tasks, name); found {
			return temporal.NewApplicationError(fmt.Sprintf("a task named %q exists; choose another name, or change that task with PUT", name), CodeTaskExists)
		}
		if len(st.Tasks) >= MaxTasks {
			return temporal.NewApplicationError(fmt.Sprintf("the project holds %d tasks, the most it may; delete one first", MaxTasks), CodeTaskLimit)
		}
		return nil
	}}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateReleaseTask, func(ctx workflow.Context, name string) error {
		if i, found := slices.BinarySearch(st.Tasks, name); found {
			st.Tasks = slices.Delete(st.Tasks, i, i+1)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateAddPrompt, func(ctx workflow.Context, name string) error {
		st.Prompts = insertSorted(st.Prompts, name)
		return nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryTasks, func() ([]string, error) { return st.Tasks, nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryPrompts, func() ([]string, error) { return st.Prompts, nil }); err != nil {
		return err
	}
	if err := continueWhenDue(ctx, func() bool { return false }); err != nil {
		return err
	}
	return workflow.NewContinueAsNewError(ctx, IndexWorkflow, st)
}

func insertSorted(list []string, s string) []string {
	i, found := slices.BinarySearch(list, s)
	if found {
		return list
	}
	return slices.Insert(list, i, s)
}

// TaskState is a task definition entity's state.
type TaskState struct {
	Name   string `json:"name"`
	Stored Stored `json:"stored"`
}

// TaskDefinition holds one task's definition. It completes when the task is
// deleted (a new task of the same name is a new run of the same ID).
func TaskDefinition(ctx workflow.Context, st TaskState) error {
	if st.Stored.CreatedAt == "" {
		st.Stored.CreatedAt = stamp(ctx)
		st.Stored.UpdatedAt, st.Stored.UpdatedBy = st.Stored.CreatedAt, st.Stored.CreatedBy
	}
	exists := func(ctx workflow.Context, _ Change) error {
		if st.Stored.Deleted {
			return temporal.NewApplicationError(fmt.Sprintf("no task named %q", st.Name), CodeTaskNotFound)
		}
		return nil
	}
	if err := workflow.SetQueryHandler(ctx, QueryGet, func() (Stored, error) { return st.Stored, nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdatePut, func(ctx workflow.Context, c Change) (Stored, error) {
		st.Stored.Definition = c.Definition
		st.Stored.UpdatedBy, st.Stored.UpdatedAt = c.By, stamp(ctx)
		return st.Stored, nil
	}, workflow.UpdateHandlerOptions{Validator: exists}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateDelete, func(ctx workflow.Context, c Change) error {
		st.Stored.Deleted = true
		st.Stored.UpdatedBy, st.Stored.UpdatedAt = c.By, stamp(ctx)
		return nil
	}, workflow.UpdateHandlerOptions{Validator: exists}); err != nil {
		return err
	}
	if err := continueWhenDue(ctx, func() bool { return st.Stored.Deleted }); err != nil {
		return err
	}
	if st.Stored.Deleted {
		return nil
	}
	return workflow.NewContinueAsNewError(ctx, TaskWorkflow, st)
}

// PromptState is a prompt entity's state: versions without their texts.
type PromptState struct {
	Name     string          `json:"name"`
	Prefix   string          `json:"prefix"` // of the store's workflow IDs
	Versions []PromptVersion `json:"versions"`
}

// Prompt numbers a prompt's versions. Each version's text is kept by a
// PromptVersion workflow of its own, started by the update that numbers it
// (and left running when the prompt continues as new).
func Prompt(ctx workflow.Context, st PromptState) error {
	if err := workflow.SetQueryHandler(ctx, QueryGet, func() (PromptInfo, error) {
		return PromptInfo{Name: st.Name, LatestVersion: len(st.Versions), Versions: st.Versions}, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateAddVersion, func(ctx workflow.Context, nv NewVersion) (PromptVersion, error) {
		v := PromptVersion{Name: st.Name, Version: len(st.Versions) + 1, Variables: nv.Variables, CreatedAt: stamp(ctx), CreatedBy: nv.By}
		if v.Variables == nil {
			v.Variables = []string{}
		}
		st.Versions = append(st.Versions, v) // numbered now: a second update waits for no one
		full := v
		full.Text = nv.Text
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:        versionID(st.Prefix, st.Name, v.Version),
			ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON, // a version outlives this run
		})
		if err := workflow.ExecuteChildWorkflow(cctx, PromptVersionWorkflow, full).GetChildWorkflowExecution().Get(ctx, nil); err != nil {
			return PromptVersion{}, err
		}
		return v, nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, nv NewVersion) error {
		if nv.Text == "" {
			return temporal.NewApplicationError("a prompt version needs its text", "validation_failed")
		}
		return nil
	}}); err != nil {
		return err
	}
	if err := continueWhenDue(ctx, func() bool { return false }); err != nil {
		return err
	}
	return workflow.NewContinueAsNewError(ctx, PromptWorkflow, st)
}

// PromptVersionEntity keeps one version's text and answers reads of it.
func PromptVersionEntity(ctx workflow.Context, v PromptVersion) error {
	if err := workflow.SetQueryHandler(ctx, QueryGet, func() (PromptVersion, error) { return v, nil }); err != nil {
		return err
	}
	return workflow.Await(ctx, func() bool { return false }) // immutable: never ends
}

// Workflow IDs: "/" is outside the name grammar, so no name reaches
// another entity's ID.
func indexID(prefix string) string        { return prefix + "index" }
func taskID(prefix, name string) string   { return prefix + "task/" + name }
func promptID(prefix, name string) string { return prefix + "prompt/" + name }
func versionID(prefix, name string, v int) string {
	return promptID(prefix, name) + "/v" + strconv.Itoa(v)
}
