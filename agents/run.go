package agents

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workflows"
	"github.com/agenttask/agenttask/starter"
)

// Run starts the agent task args as a child workflow and waits for its
// result. Mode is single unless args says otherwise: the task ends after
// its first answer (and, with args.Output, its shaped result).
func Run(ctx workflow.Context, args contract.StartArgs, opts ...Option) (*Result, error) {
	if args.Mode == "" {
		args.Mode = contract.ModeSingle
	}
	t, err := start(ctx, args, optionsOf(opts))
	if err != nil {
		return nil, err
	}
	return t.Result(ctx)
}

// Start starts the agent task args as a child workflow, a conversation
// unless args says otherwise, and returns once it has started. Talk to it
// with Ask (t.TaskID); Close ends it; Result waits for its end. The child
// outlives the calling workflow unless WithParentClosePolicy says
// otherwise (the default is PARENT_CLOSE_POLICY_ABANDON): a workflow that
// hands the task ID on and ends leaves the conversation running.
func Start(ctx workflow.Context, args contract.StartArgs, opts ...Option) (*Task, error) {
	if args.Mode == "" {
		args.Mode = contract.ModeConversation
	}
	o := optionsOf(opts)
	if o.parentClose == enumspb.PARENT_CLOSE_POLICY_UNSPECIFIED {
		o.parentClose = enumspb.PARENT_CLOSE_POLICY_ABANDON
	}
	return start(ctx, args, o)
}

// Task is a started child task.
type Task struct {
	TaskID string
	// Future resolves when the task ends, to a contract.Result; Result
	// reads it with the errors typed.
	Future workflow.ChildWorkflowFuture
	opts   options
}

// Result waits for the task's end.
func (t *Task) Result(ctx workflow.Context) (*Result, error) {
	var r contract.Result
	if err := t.Future.Get(ctx, &r); err != nil {
		return nil, typed(t.TaskID, err)
	}
	return resultOf(t.TaskID, r), nil
}

// Close asks the task to end once its queued inputs are answered (the
// close signal); its Result follows.
func (t *Task) Close(ctx workflow.Context) error {
	return typed(t.TaskID, t.Future.SignalChildWorkflow(ctx, contract.SignalClose, nil).Get(ctx, nil))
}

// Ask sends a follow-up to the task and waits for its answer (package
// function Ask, with the task's queue).
func (t *Task) Ask(ctx workflow.Context, input contract.TaskIO, opts ...Option) (*Answer, error) {
	o := t.opts
	for _, f := range opts {
		f(&o)
	}
	return ask(ctx, t.TaskID, input, o)
}

// startCheck is what the SideEffect records: the start check's refusal, or
// the child's generated ID suffix.
type startCheck struct {
	Refusal *contract.Error `json:"refusal,omitempty"`
	Suffix  string          `json:"suffix,omitempty"`
}

func start(ctx workflow.Context, args contract.StartArgs, o options) (*Task, error) {
	parent := workflow.GetInfo(ctx).WorkflowExecution.ID
	var chk startCheck
	// Recorded, so replay never depends on this release's rules or on
	// randomness.
	err := workflow.SideEffect(ctx, func(workflow.Context) any { return checkStart(args, o.taskID) }).Get(&chk)
	if err != nil {
		return nil, err
	}
	id := o.taskID
	if id == "" {
		id = childID(parent, args.Agent.Name, chk.Suffix)
	}
	if chk.Refusal != nil {
		return nil, &RefusedError{TaskID: id, Type: chk.Refusal.Type, Message: chk.Refusal.Message}
	}
	cwo := workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		TaskQueue:             o.taskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		ParentClosePolicy:     o.parentClose, // unspecified (Run's default): Temporal's, TERMINATE
		StaticSummary:         o.summary,
	}
	if cwo.StaticSummary == "" {
		cwo.StaticSummary = starter.Summary(args)
	}
	if o.searchAttributes {
		cwo.TypedSearchAttributes = starter.SearchAttributes(args.Agent)
	}
	f := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, cwo), contract.WorkflowType, args)
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		return nil, typed(id, err)
	}
	return &Task{TaskID: id, Future: f, opts: o}, nil
}

// checkStart runs the workflow's own start checks (the same the child runs
// first) and, without a given ID, draws the ID's suffix.
func checkStart(args contract.StartArgs, id string) startCheck {
	var out startCheck
	if _, err := workflows.CheckStart(&workflows.StartArgs{StartArgs: args}); err != nil {
		out.Refusal = asContractError(err)
		return out
	}
	if args.Input != nil { // an input decoded from JSON (the workflow's own argument, say) with keys a part lacks
		if err := contract.CheckPartKeys(*args.Input); err != nil {
			out.Refusal = contract.Invalid("input: %s", contract.MessageOf(err))
			return out
		}
	}
	if id != "" {
		if err := starter.CheckTaskID(id); err != nil {
			out.Refusal = asContractError(err)
			return out
		}
	} else {
		var b [5]byte
		_, _ = rand.Read(b[:])
		out.Suffix = strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))
	}
	if args.Stream && id != "" {
		if err := workflows.CheckStreamID(id); err != nil {
			out.Refusal = asContractError(err)
		}
	} else if args.Stream {
		out.Refusal = contract.Invalid("stream: a streamed task's ID is letters, digits, '-' and '_' only; name it with agents.WithTaskID")
	}
	return out
}

// childID is "<parent>.<agent>.<suffix>", cut to the starter's bound.
func childID(parent, agent, suffix string) string {
	tail := "." + agent + "." + suffix
	if len(parent)+len(tail) > starter.MaxTaskIDBytes {
		parent = parent[:starter.MaxTaskIDBytes-len(tail)]
	}
	return parent + tail
}

func asContractError(err error) *contract.Error {
	if ce, ok := err.(*contract.Error); ok {
		return ce
	}
	return &contract.Error{Type: contract.ErrInvalidInput, Message: fmt.Sprint(err)}
}
