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
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/mount"
)

// delegate {"message": string, "files"?: [reference]} starts the
// capability's agent as a sub-task (a child AgentTask in single mode) with
// the message and the files, copied into the sub-task's mount; its answer
// comes back as the call's result, and the files it attaches are copied
// into this task's mount and shown to the model from there.

// copyOptions copy files between task spaces (a sub-task's, and the carried
// conversation's in continuations.go).
var copyOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Hour, // large objects stream; heartbeats show progress
	HeartbeatTimeout:    30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
		NonRetryableErrorTypes: []string{contract.ErrInvalidInput, mount.ErrFileNotFound, mount.ErrFileChanged},
	},
}

// delegateArgs are a delegate call's arguments.
type delegateArgs struct {
	Message string   `json:"message"`
	Files   []string `json:"files"`
}

// delegate runs a sub-task and brings its answer and files back.
func (t *task) delegate(ctx workflow.Context, turn, idx int, segment string, c contract.Capability, rawArgs string) (string, []contract.ContentPart, error) {
	var args delegateArgs
	if err := json.Unmarshal([]byte(rawArgs), &args); err != nil || strings.TrimSpace(args.Message) == "" {
		return "", nil, fmt.Errorf(`the arguments must be {"message": "...", "files": ["%s://name", ...]}`, refScheme(&t.args.Agent))
	}
	childID := fmt.Sprintf("%s.%s.t%d.c%d", t.life.id(), c.Name, turn, idx)
	input, err := subTaskInput(ctx, t.args.Agent, t.life.id(), c, childID, args)
	if err != nil {
		return "", nil, err
	}
	var res contract.Result
	childArgs := StartArgs{StartArgs: contract.StartArgs{Agent: *c.Agent, Input: &input, Mode: contract.ModeSingle}}
	if t.rules.subTaskRetryTimeout {
		childArgs.ModelRetryTimeout = t.args.ModelRetryTimeout // a sub-task waits out outages as long as its parent
	}
	childArgs.Budget = t.durable.subTaskBudget(t.rules.spendBudget, c, childID) // budget.go: its share of this task's, held while it runs
	// The parent's start proved the attributes registered: the sub-task is
	// listed too.
	listed := t.rules.subTaskAttributes && t.life.trackedAgentState() != ""
	opts := subTaskOptions(ctx, c, childID, t.life.id(), listed)
	if t.rules.nestedSubTasks && len(c.Agent.Capabilities) > 0 {
		// A sub-task of a tree reports its approvals and spend here (tree.go).
		opts = withParent(opts, t.life.id())
		t.tree.started(childID, segment)
		defer t.tree.ended(childID)
	}
	err = workflow.ExecuteChildWorkflow(opts, contract.WorkflowType, childArgs).Get(ctx, &res)
	if childArgs.Budget != nil {
		t.durable.endSubTaskBudget(childID, &res, err)
	}
	if err != nil {
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) {
			return "", nil, fmt.Errorf("the sub-task failed: %s: %s", ae.Type(), ae.Message())
		}
		return "", nil, fmt.Errorf("the sub-task failed: %v", err)
	}
	if res.LastOutput == nil {
		return "", nil, errors.New("the sub-task ended without an answer")
	}
	return subTaskAnswer(ctx, t.args.Agent, t.life.id(), c, childID, fmt.Sprintf("from-%s-t%d-c%d", c.Name, turn, idx), *res.LastOutput)
}

// subTaskInput is the sub-task's input: the message, and the files it
// names copied from this task's mount (of parent, the task parentID's
// agent) into the sub-task's.
func subTaskInput(ctx workflow.Context, parent contract.AgentSpec, parentID string, c contract.Capability, childID string, args delegateArgs) (contract.TaskIO, error) {
	input := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(args.Message)}}
	if len(args.Files) == 0 {
		return input, nil
	}
	if parent.Mount == nil {
		return input, errors.New("this agent has no mount, so it has no files to hand over")
	}
	if c.Agent.Mount == nil {
		return input, fmt.Errorf("the agent %q has no mount to receive files", c.Agent.Name)
	}
	var parts []contract.ContentPart
	for _, ref := range args.Files {
		if _, err := mount.ParseRef(parent.Mount.Root, ref); err != nil {
			return input, fmt.Errorf("%s: %s", ref, contract.MessageOf(err))
		}
		r := ref
		parts = append(parts, contract.ContentPart{File: &r}) // the copy finds the media type
	}
	copied, err := copyFiles(ctx, *parent.Mount, parentID, parts, *c.Agent.Mount, childID, "")
	if err != nil {
		return input, err
	}
	input.Message = append(input.Message, copied...)
	return input, nil
}

// subTaskOptions starts the sub-task under its ID, a sub-task of the task
// parentID, listed like its parent when listed.
func subTaskOptions(ctx workflow.Context, c contract.Capability, childID, parentID string, listed bool) workflow.Context {
	childOpts := workflow.ChildWorkflowOptions{
		WorkflowID:          childID,
		StaticSummary:       fmt.Sprintf("sub-task of %s: %s", parentID, c.Name),
		WaitForCancellation: false,
	}
	if listed {
		childOpts.TypedSearchAttributes = temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(contract.SearchAttributeAgentName).ValueSet(c.Agent.Name),
			temporal.NewSearchAttributeKeyKeyword(contract.SearchAttributeAgentModel).ValueSet(c.Agent.Model),
			agentStateKey.ValueSet(contract.AgentStateActive))
	}
	return workflow.WithChildOptions(ctx, childOpts)
}

// withParent names the parent a sub-task of a tree reports to, in its memo.
func withParent(ctx workflow.Context, parentID string) workflow.Context {
	o := workflow.GetChildWorkflowOptions(ctx)
	o.Memo = map[string]any{MemoParent: parentID}
	return workflow.WithChildOptions(ctx, o)
}

// subTaskAnswer is the call's result: the sub-task's answer text, and the
// files it attached, copied into this task's mount (of parent, the task
// parentID's agent) under prefix.
func subTaskAnswer(ctx workflow.Context, parent contract.AgentSpec, parentID string, c contract.Capability, childID, prefix string, out contract.TaskIO) (string, []contract.ContentPart, error) {
	var texts []string
	var files []contract.ContentPart
	for _, p := range out.Message {
		if p.Text != nil {
			texts = append(texts, *p.Text)
		} else if p.File != nil {
			files = append(files, p)
		}
	}
	content := strings.Join(texts, "\n")
	if len(files) == 0 {
		return content, files, nil
	}
	if parent.Mount == nil {
		return content + "\n[the sub-task attached files, but this agent has no mount to receive them]", nil, nil
	}
	copied, err := copyFiles(ctx, *c.Agent.Mount, childID, files, *parent.Mount, parentID, prefix)
	if err != nil {
		return "", nil, err
	}
	return content, copied, nil
}

// copyFiles copies files from one task's space to another's.
func copyFiles(ctx workflow.Context, src contract.MountSpec, srcTask string, parts []contract.ContentPart, dst contract.MountSpec, dstTask, prefix string) ([]contract.ContentPart, error) {
	in := activities.CopyFilesInput{Src: src, SrcTask: srcTask, Parts: parts, Dst: dst, DstTask: dstTask, DstPrefix: prefix}
	var res activities.CopyFilesResult
	o := copyOptions
	o.Summary = fmt.Sprintf("copy %d files %s → %s", len(parts), srcTask, dstTask)
	actx := workflow.WithActivityOptions(ctx, o)
	if err := workflow.ExecuteActivity(actx, activities.CopyFilesName, in).Get(ctx, &res); err != nil {
		return nil, errors.New(contract.MessageOf(unwrapActivityError(err)))
	}
	return res.Parts, nil
}

// refScheme is the scheme of agent's file references.
func refScheme(agent *contract.AgentSpec) string {
	if agent.Mount != nil {
		return agent.Mount.Root
	}
	return "task"
}
