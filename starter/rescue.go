package starter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/workflows"
)

// Error types of rescue and resume.
const (
	ErrNotRescuable = contract.ErrTaskNotRescuable // running, or completed (resume it instead)
	ErrNotResumable = contract.ErrTaskNotResumable // not completed (rescue it instead)
)

// Memo keys linking a new run to the task it continues.
const (
	MemoRescuedFrom = "rescued_from"
	MemoResumedFrom = "resumed_from"
)

// Rescue starts a new task that redoes a failed, canceled, terminated or
// timed-out one: the same start argument, with everything the old task
// collected, so it remembers what it saved. input replaces the original
// input when given. The new task's memo names the old one.
func (c *Client) Rescue(ctx context.Context, oldID string, input *contract.TaskIO, o StartOptions) (string, error) {
	return c.again(ctx, oldID, input, o, false)
}

// Resume starts a new task that continues a completed one with a new input,
// carrying everything it collected.
func (c *Client) Resume(ctx context.Context, oldID string, input contract.TaskIO, o StartOptions) (string, error) {
	return c.again(ctx, oldID, &input, o, true)
}

func (c *Client) again(ctx context.Context, oldID string, input *contract.TaskIO, o StartOptions, resume bool) (string, error) {
	d, err := c.c.DescribeWorkflowExecution(ctx, oldID, "")
	if err != nil {
		return "", taskError(oldID, "describing", err)
	}
	info := d.GetWorkflowExecutionInfo()
	st := info.GetStatus()
	switch {
	case resume && st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return "", &contract.Error{Type: ErrNotResumable, Message: fmt.Sprintf("task %q is %s; resume continues a completed task (rescue redoes a failed one)", oldID, st)}
	case !resume && (st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED ||
		st == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW):
		return "", &contract.Error{Type: ErrNotRescuable, Message: fmt.Sprintf("task %q is %s; rescue redoes a failed, canceled, terminated or timed-out task (resume continues a completed one)", oldID, st)}
	}
	args, err := c.startArgs(ctx, oldID, info.GetExecution().GetRunId(), info.GetFirstRunId(), o.Variables)
	if err != nil {
		return "", err
	}
	v, err := c.c.QueryWorkflow(ctx, oldID, "", contract.QueryCollected)
	if err != nil {
		return "", taskError(oldID, "reading what was collected by", err)
	}
	var collected []contract.Collected
	if err := v.Get(&collected); err != nil {
		return "", fmt.Errorf("decoding what task %q collected: %w", oldID, err)
	}
	args.Collected = map[string]json.RawMessage{}
	for _, c := range collected {
		args.Collected[c.Name] = c.Value
	}
	// The conversation continues by reference: the old task's transcript,
	// with the entries from its last output on carried inline.
	cont, err := c.continuation(ctx, oldID)
	if err != nil {
		return "", err
	}
	// Values the old task kept by reference travel as their previews and
	// references; the new task copies each into its own stash.
	for _, c := range collected {
		if c.Ref != nil {
			if cont.CollectedRefs == nil {
				cont.CollectedRefs = map[string]activities.ValueRef{}
			}
			cont.CollectedRefs[c.Name] = *c.Ref
		}
	}
	args.Continue = cont
	if args.Budget, err = c.budgetLeft(ctx, oldID, args.Budget, o.Budget); err != nil {
		return "", err
	}
	args.Input = nil   // already in the conversation
	args.History = nil // likewise
	if input != nil {
		in := *input
		args.Input = &in
	}
	key := MemoRescuedFrom
	if resume {
		key = MemoResumedFrom
	}
	if o.Memo == nil {
		o.Memo = map[string]any{}
	}
	o.Memo[key] = oldID
	return c.Start(ctx, args.StartArgs, o)
}

// budgetLeft is the new task's budget: the caller's, else what is left of
// the old task's (its status says), else none.
func (c *Client) budgetLeft(ctx context.Context, oldID string, old, given *contract.Budget) (*contract.Budget, error) {
	if given != nil || old == nil {
		return given, nil
	}
	st, err := c.Status(ctx, oldID)
	if err != nil {
		return nil, err
	}
	if st.Budget == nil { // started with a budget on a worker that kept none
		return old, nil
	}
	return &contract.Budget{Amounts: st.Budget.Left, OnExhausted: st.Budget.Limit.OnExhausted}, nil
}

// continuation reads the old task's conversation into a ContinueFrom.
func (c *Client) continuation(ctx context.Context, oldID string) (*contract.ContinueFrom, error) {
	v, err := c.c.QueryWorkflow(ctx, oldID, "", contract.QueryDescribe)
	if err != nil {
		return nil, taskError(oldID, "describing", err)
	}
	var d contract.Describe
	if err := v.Get(&d); err != nil {
		return nil, fmt.Errorf("decoding the description of task %q: %w", oldID, err)
	}
	msgs, err := c.AllMessages(ctx, oldID)
	if err != nil {
		return nil, err
	}
	cont := &contract.ContinueFrom{TaskID: d.TranscriptTaskID, FirstRunID: d.TranscriptFirstRunID, Source: oldID}
	if d.Transcript.TaskID != "" {
		cont.From, cont.Parent = d.Transcript.From, d.Transcript.Parent
	}
	committed := 0
	for i, m := range msgs {
		if m.CommittedAt == "" {
			cont.Queued = append(cont.Queued, m)
			continue
		}
		committed = i + 1
		if m.Type == contract.TypeOutput {
			cont.TailFrom = i
		}
	}
	if d.Durable < cont.TailFrom {
		// Entries the old task held but never wrote (a history it started
		// with, ended before any model call) travel inline too.
		cont.TailFrom = d.Durable
	}
	cont.Length = committed
	cont.Tail = append([]contract.Message(nil), msgs[cont.TailFrom:committed]...)
	return cont, nil
}

// startArgs reads the start argument of the old task's latest run: its
// caller's argument when it never continued as new, else the one the runtime
// handed on (the same agent, output and variables; secrets masked). When
// that run started from a reference (carryRef: its state was large), its
// history holds only the reference: handedOn reads the rest. Secret values
// come from the first run while its history is retained, else from vars;
// without them the rescue is refused, naming the secrets, rather than run
// with placeholders. vars also replace other variables.
func (c *Client) startArgs(ctx context.Context, id, runID, firstRunID string, vars map[string]json.RawMessage) (workflows.StartArgs, error) {
	args, prev, err := c.runStart(ctx, id, runID)
	if err != nil {
		return args, err
	}
	if args.CarryRef != nil {
		if args, err = c.handedOn(ctx, id, runID, prev); err != nil {
			return args, err
		}
	}
	later := runID != firstRunID
	args.Carry, args.CarryRef = nil, nil
	if later && len(args.Secrets) > 0 {
		if first, _, err := c.runStart(ctx, id, firstRunID); err == nil {
			for _, name := range args.Secrets {
				if v, ok := first.Variables[name]; ok {
					args.Variables[name] = v
				}
			}
		} else {
			var missing []string
			for _, name := range args.Secrets {
				if _, ok := vars[name]; !ok {
					missing = append(missing, name)
				}
			}
			if len(missing) > 0 {
				return args, &contract.Error{Type: contract.ErrInvalidInput, Message: fmt.Sprintf(
					"task %q: the history of its first run is gone, and the values of its secrets %v were never written anywhere else; pass them again as variables (StartOptions.Variables, or --var NAME=JSON)", id, missing)}
			}
		}
	}
	for name, v := range vars {
		if args.Variables == nil {
			args.Variables = map[string]json.RawMessage{}
		}
		args.Variables[name] = v
	}
	return args, nil
}

// handedOn reads what a run that started from a reference was handed: the
// run's start-args query (its worker read the reference back), which needs
// no earlier run's history. A worker too old to know the query is answered
// from history instead: the newest earlier run whose argument is inline
// (the chain's first run at the latest), reached through each run's
// ContinuedExecutionRunId.
func (c *Client) handedOn(ctx context.Context, id, runID, prev string) (workflows.StartArgs, error) {
	var args workflows.StartArgs
	v, err := c.c.QueryWorkflow(ctx, id, runID, workflows.QueryStartArgs)
	if err == nil {
		if err := v.Get(&args); err != nil {
			return args, fmt.Errorf("decoding the start argument of task %q: %w", id, err)
		}
		return args, nil
	}
	if !unknownQuery(err) {
		return args, taskError(id, "reading the start argument of", err)
	}
	for prev != "" {
		earlier, before, err := c.runStart(ctx, id, prev)
		if err != nil {
			return earlier, fmt.Errorf("task %q: its latest run started from a reference, its worker does not answer the %s query (upgrade the worker), and an earlier run cannot be read: %w",
				id, workflows.QueryStartArgs, err)
		}
		if earlier.CarryRef == nil {
			return earlier, nil
		}
		prev = before
	}
	return args, fmt.Errorf("task %q: its latest run started from a reference, its worker does not answer the %s query (upgrade the worker), and no earlier run has an inline start argument", id, workflows.QueryStartArgs)
}

// unknownQuery reports whether a query failed because the workflow has no
// handler for it (the SDK's "unknown queryType" answer).
func unknownQuery(err error) bool {
	return err != nil && strings.Contains(err.Error(), "unknown queryType")
}

// runStart reads the start argument of one run of a task, and the run it
// continued (empty for a first run).
func (c *Client) runStart(ctx context.Context, id, runID string) (workflows.StartArgs, string, error) {
	var args workflows.StartArgs
	it := c.c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return args, "", fmt.Errorf("task %q has no history", id)
	}
	e, err := it.Next()
	if err != nil {
		return args, "", taskError(id, "reading the history of", err)
	}
	attrs := e.GetWorkflowExecutionStartedEventAttributes()
	if err := c.dataConverter().FromPayloads(attrs.GetInput(), &args); err != nil {
		return args, "", fmt.Errorf("task %q: its start argument does not decode: %w", id, err)
	}
	return args, attrs.GetContinuedExecutionRunId(), nil
}
