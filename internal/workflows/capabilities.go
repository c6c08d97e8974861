package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/mount"
)

// Capabilities are the tools the model can call. A turn that calls one runs
// it here, then calls the model again, committing any inputs queued
// meanwhile (seed 000).
//
//   delegate {"message": string, "files"?: [reference]}: starts the
//   capability's agent as a sub-task (a child AgentTask in single mode) with
//   the message and the files, copied into the sub-task's mount; its answer
//   comes back as the call's result, and the files it attaches are copied
//   into this task's mount and shown to the model from there.

const (
	maxCapabilityRounds = 8         // model calls with capability calls, per turn
	maxResultBytes      = 16 << 10  // a capability result shown to the model
	maxScratchBytes     = 192 << 10 // all of a turn's capability exchange, in every model call argument
)

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

// runCapability runs one call and returns what the model sees of it. A call
// that cannot run is answered with the reason, so the model can recover.
func (t *task) runCapability(ctx workflow.Context, turn, idx int, call activities.ToolCall) activities.ScratchMessage {
	res := activities.ScratchMessage{ToolCallID: call.ID}
	capability := t.capability(call.Name)
	if capability == nil {
		res.Content = fmt.Sprintf("error: there is no capability named %q", call.Name)
		return res
	}
	var content string
	var files []contract.ContentPart
	var err error
	if capability.Kind == contract.CapabilityActivity && t.rules.activityCapabilities {
		content, err = t.runActivity(ctx, *capability, call.Arguments)
	} else {
		content, files, err = t.delegate(ctx, turn, idx, *capability, call.Arguments)
	}
	if err != nil {
		res.Content = "error: " + err.Error()
		return res
	}
	limit := maxResultBytes
	if capability.Kind == contract.CapabilityActivity {
		limit = maxActivityResultBytes // checked by runActivity
	}
	if len(content) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(content[cut]) {
			cut--
		}
		content = content[:cut] + " [cut: the rest is in the sub-task's conversation]"
	}
	res.Content, res.Files = content, files
	v, _ := json.Marshal(content)
	t.collectValue(ctx, call.Name, v) // a capability's result is collected
	return res
}

func (t *task) capability(name string) *contract.Capability {
	for i := range t.args.Agent.Capabilities {
		if t.args.Agent.Capabilities[i].Name == name {
			return &t.args.Agent.Capabilities[i]
		}
	}
	return nil
}

// delegate runs a sub-task and brings its answer and files back.
func (t *task) delegate(ctx workflow.Context, turn, idx int, c contract.Capability, rawArgs string) (string, []contract.ContentPart, error) {
	var args delegateArgs
	if err := json.Unmarshal([]byte(rawArgs), &args); err != nil || strings.TrimSpace(args.Message) == "" {
		return "", nil, fmt.Errorf(`the arguments must be {"message": "...", "files": ["%s://name", ...]}`, t.root())
	}
	parent := t.args.Agent
	childID := fmt.Sprintf("%s.%s.t%d.c%d", t.life.taskID, c.Name, turn, idx)
	input := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(args.Message)}}
	if len(args.Files) > 0 {
		if parent.Mount == nil {
			return "", nil, errors.New("this agent has no mount, so it has no files to hand over")
		}
		if c.Agent.Mount == nil {
			return "", nil, fmt.Errorf("the agent %q has no mount to receive files", c.Agent.Name)
		}
		var parts []contract.ContentPart
		for _, ref := range args.Files {
			if _, err := mount.ParseRef(parent.Mount.Root, ref); err != nil {
				return "", nil, fmt.Errorf("%s: %s", ref, contract.MessageOf(err))
			}
			r := ref
			parts = append(parts, contract.ContentPart{File: &r}) // the copy finds the media type
		}
		copied, err := t.copyFiles(ctx, *parent.Mount, t.life.taskID, parts, *c.Agent.Mount, childID, "")
		if err != nil {
			return "", nil, err
		}
		input.Message = append(input.Message, copied...)
	}
	childOpts := workflow.ChildWorkflowOptions{
		WorkflowID:          childID,
		StaticSummary:       fmt.Sprintf("sub-task of %s: %s", t.life.taskID, c.Name),
		WaitForCancellation: false,
	}
	if t.rules.subTaskAttributes && t.life.agentState != "" {
		// The parent's start proved the attributes registered: the sub-task
		// is listed too.
		childOpts.TypedSearchAttributes = temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(SearchAttributeAgentName).ValueSet(c.Agent.Name),
			temporal.NewSearchAttributeKeyKeyword(SearchAttributeAgentModel).ValueSet(c.Agent.Model),
			agentStateKey.ValueSet(AgentStateActive))
	}
	cctx := workflow.WithChildOptions(ctx, childOpts)
	var res Result
	childArgs := StartArgs{Agent: *c.Agent, Input: &input, Mode: ModeSingle}
	if t.rules.subTaskRetryTimeout {
		childArgs.ModelRetryTimeout = t.args.ModelRetryTimeout // a sub-task waits out outages as long as its parent
	}
	err := workflow.ExecuteChildWorkflow(cctx, WorkflowType, childArgs).Get(ctx, &res)
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
	var texts []string
	var files []contract.ContentPart
	for _, p := range res.LastOutput.Message {
		if p.Text != nil {
			texts = append(texts, *p.Text)
		} else if p.File != nil {
			files = append(files, p)
		}
	}
	content := strings.Join(texts, "\n")
	if len(files) > 0 {
		if parent.Mount == nil {
			return content + "\n[the sub-task attached files, but this agent has no mount to receive them]", nil, nil
		}
		prefix := fmt.Sprintf("from-%s-t%d-c%d", c.Name, turn, idx)
		copied, err := t.copyFiles(ctx, *c.Agent.Mount, childID, files, *parent.Mount, t.life.taskID, prefix)
		if err != nil {
			return "", nil, err
		}
		files = copied
	}
	return content, files, nil
}

func (t *task) copyFiles(ctx workflow.Context, src contract.MountSpec, srcTask string, parts []contract.ContentPart, dst contract.MountSpec, dstTask, prefix string) ([]contract.ContentPart, error) {
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

func (t *task) root() string {
	if t.args.Agent.Mount != nil {
		return t.args.Agent.Mount.Root
	}
	return "task"
}

// maxActivityResultBytes bounds an activity capability's result.
const maxActivityResultBytes = 64 << 10

// checkCallArguments checks an activity capability's arguments against its
// parameters; the violations go back to the model ("" when they fit).
func (t *task) checkCallArguments(c *contract.Capability, args string) string {
	if c.Kind != contract.CapabilityActivity || !t.rules.activityCapabilities {
		return ""
	}
	if vs := t.agent.CheckCapabilityArgs(c.Name, json.RawMessage(args)); len(vs) > 0 {
		return fmt.Sprintf("error: the arguments do not fit %q's parameters: %s; call it again with arguments that do", c.Name, contract.JoinViolations(vs))
	}
	return ""
}

// runActivity runs an activity capability: the caller's activity, on its
// task queue, with the model's arguments as its one JSON argument. Its
// JSON result is what the model reads; a failure too (its type and
// message), once the retry policy gives up or at once when non-retryable.
func (t *task) runActivity(ctx workflow.Context, c contract.Capability, args string) (string, error) {
	if len(args) == 0 {
		args = "{}"
	}
	p := c.RetryPolicy()
	opts := workflow.ActivityOptions{
		TaskQueue:           c.TaskQueue, // empty (older rules only): the task's own
		StartToCloseTimeout: c.Timeout(),
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: p.InitialInterval, BackoffCoefficient: p.BackoffCoefficient,
			MaximumInterval: p.MaximumInterval, MaximumAttempts: int32(p.MaximumAttempts)},
		Summary: fmt.Sprintf("capability %s", c.Name),
	}
	if t.rules.activityTimeouts {
		// A queue nobody polls (a typo) or a worker that never finishes
		// ends the call, not the turn: the model reads why.
		opts.ScheduleToStartTimeout, opts.ScheduleToCloseTimeout = c.StartWait(), c.CallWait()
	}
	var out json.RawMessage
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), c.Activity, json.RawMessage(args)).Get(ctx, &out)
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		var ae *temporal.ApplicationError
		var te *temporal.TimeoutError
		switch {
		case errors.As(err, &ae):
			typ := ae.Type()
			if typ == "" {
				typ = "error"
			}
			return "", fmt.Errorf("%s: %s", typ, truncate(ae.Message(), 2_000))
		case errors.As(err, &te):
			return "", timeoutMessage(c, te)
		}
		return "", fmt.Errorf("the activity %q failed: %s", c.Activity, truncate(err.Error(), 2_000))
	}
	if len(out) > maxActivityResultBytes {
		return "", fmt.Errorf("the activity %q returned %d bytes, more than %d", c.Activity, len(out), maxActivityResultBytes)
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	return string(out), nil
}

// timeoutMessage tells the model which bound an activity call met, naming
// the activity and its task queue.
func timeoutMessage(c contract.Capability, te *temporal.TimeoutError) error {
	switch te.TimeoutType() {
	case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START:
		return fmt.Errorf("TIMEOUT: no worker on task queue %q picked up the activity %q within %s (is a worker that registers it running on that queue?); the call did not run", c.TaskQueue, c.Activity, c.StartWait())
	case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE:
		return fmt.Errorf("TIMEOUT: the activity %q on task queue %q did not finish within %s, all attempts included", c.Activity, c.TaskQueue, c.CallWait())
	}
	return fmt.Errorf("TIMEOUT: the activity %q on task queue %q did not finish in time (%s)", c.Activity, c.TaskQueue, te.TimeoutType())
}
