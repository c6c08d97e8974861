package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
)

// Agent trees (rules.nestedSubTasks; docs/agents.md). A delegated agent may
// delegate in turn, the tree at most the worker operator's depth. Each
// sub-task is a child workflow as before; what a person at the root must
// see travels up the tree as signals:
//
//   - a sub-task of a tree (its parent named in its memo, AgentParent)
//     sends its parent a subtask-report whenever its pending approvals
//     (its own and its sub-tasks', by path) or its spend change;
//   - the parent lists those approvals under the delegate call's path
//     ("t2.c1/t1.c3"), counts the spend in its budget at once (the share
//     it holds for the sub-task stays held: the sub-task can spend no
//     more), and reports up in turn;
//   - a decision for such an approval, given at any level above it, is
//     routed down as decide-routed signals to the sub-task that waits.
//
// Nothing of this is carried across continue-as-new: a delegate call runs
// within one turn, and a run continues as new only between turns or while
// its own approvals wait.

// MemoParent is the memo key naming a sub-task's parent, when the sub-task
// is part of a tree (its agent has capabilities): the parent it reports to.
const MemoParent = "AgentParent"

// maxDepth is the worker operator's bound on a tree's depth
// (AGENT_MAX_AGENT_DEPTH; 0: contract.DefaultAgentDepth), read once at the
// root's start through a side effect, so replay reads what the start read.
var maxDepth atomic.Int64

// SetMaxAgentDepth sets the worker's bound on the depth of agent trees.
func SetMaxAgentDepth(n int) error {
	if n < 1 || n > contract.MaxAgentDepth {
		return fmt.Errorf("AGENT_MAX_AGENT_DEPTH: %d must be between 1 and %d", n, contract.MaxAgentDepth)
	}
	maxDepth.Store(int64(n))
	return nil
}

func operatorDepth() int {
	if n := maxDepth.Load(); n > 0 {
		return int(n)
	}
	return contract.DefaultAgentDepth
}

// treeDepth is the number of agents on spec's longest delegate path (spec
// itself included), and the path of the deepest agent.
func treeDepth(path string, spec contract.AgentSpec) (int, string) {
	depth, deepest := 1, path
	for i, c := range spec.Capabilities {
		if c.Agent == nil {
			continue
		}
		d, p := treeDepth(fmt.Sprintf("%s.capabilities[%d].agent", path, i), *c.Agent)
		if d+1 > depth {
			depth, deepest = d+1, p
		}
	}
	return depth, deepest
}

// checkTreeDepth refuses, at a root task's start, a tree deeper than the
// worker's bound. A tree of two levels (one level of sub-tasks, as before
// rules 18) needs no bound read.
func (t *task) checkTreeDepth(ctx workflow.Context) error {
	if !t.rules.nestedSubTasks || t.parent(ctx) != "" || workflow.GetInfo(ctx).ContinuedExecutionRunID != "" {
		return nil
	}
	depth, deepest := treeDepth("agent", t.args.Agent)
	if depth <= 2 {
		return nil
	}
	var bound int
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return operatorDepth() }).Get(&bound); err != nil {
		return err
	}
	if depth > bound {
		return contract.Invalid("%s: the agent tree is %d agents deep (this task's agent included), more than the %d this worker's operator allows (AGENT_MAX_AGENT_DEPTH); delegate to fewer levels", deepest, depth, bound)
	}
	return nil
}

// parent is the task this one reports to as a sub-task of a tree ("" for
// a root, or a sub-task of one level, which reports nothing).
func (t *task) parent(ctx workflow.Context) string {
	f := workflow.GetInfo(ctx).Memo.GetFields()[MemoParent]
	if f == nil {
		return ""
	}
	dc := t.dc
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	var id string
	if err := dc.FromPayload(f, &id); err != nil {
		return ""
	}
	return id
}

// sortedKeys are m's keys in order: maps are walked the same way on
// replay.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	//workflowcheck:ignore sorted below
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// jsonRawValue is v as an update's handler receives it.
func jsonRawValue(v any) (converter.RawValue, error) {
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	if err != nil {
		return converter.RawValue{}, err
	}
	return converter.NewRawValue(p), nil
}

// subTaskReport is a subtask-report signal's argument.
type subTaskReport struct {
	Child string `json:"child"`
	// Approvals are the sub-task's pending approvals, its sub-tasks' by
	// path below it; their arguments cut (maxReportedArgs).
	Approvals []contract.Approval `json:"approvals,omitempty"`
	// Spent is what the sub-task (and its running sub-tasks) spent so far,
	// when it has a budget.
	Spent *contract.Spend `json:"spent,omitempty"`
}

// maxReportedArgs bounds an approval's arguments as a report carries them:
// a pending approval per call of a response (at most 16) per level keeps a
// report small whatever the model sent.
const maxReportedArgs = 2_000

// treeState is what a task knows of its running sub-tasks' trees.
type treeState struct {
	subs map[string]*subTaskView // by the sub-task's workflow ID
	// sent is the last report this task sent its parent.
	sent string
}

// subTaskView is one running sub-task as its reports show it.
type subTaskView struct {
	segment   string // its delegate call, "t<turn>.c<n>"
	approvals []contract.Approval
}

// started notes a sub-task of a tree, started by the delegate call segment.
func (s *treeState) started(childID, segment string) {
	if s.subs == nil {
		s.subs = map[string]*subTaskView{}
	}
	s.subs[childID] = &subTaskView{segment: segment}
}

// ended forgets a sub-task.
func (s *treeState) ended(childID string) { delete(s.subs, childID) }

// take applies a sub-task's report; false for a task not running here.
func (s *treeState) take(r subTaskReport) bool {
	v := s.subs[r.Child]
	if v == nil {
		return false
	}
	v.approvals = r.Approvals
	return true
}

// pending are the running sub-tasks' pending approvals, each ID the path
// from this task.
func (s *treeState) pending() []contract.Approval {
	var out []contract.Approval
	for _, id := range sortedKeys(s.subs) {
		v := s.subs[id]
		for _, a := range v.approvals {
			a.ID = v.segment + "/" + a.ID
			if a.TaskID == "" {
				a.TaskID = id
			}
			out = append(out, a)
		}
	}
	return out
}

// find is the pending approval of path (a "/" in it), the sub-task to route
// its decision to and the rest of the path below it.
func (s *treeState) find(path string) (a *contract.Approval, childID, rest string) {
	segment, rest, _ := strings.Cut(path, "/")
	for _, id := range sortedKeys(s.subs) {
		v := s.subs[id]
		if v.segment != segment {
			continue
		}
		for i := range v.approvals {
			if v.approvals[i].ID == rest {
				return &v.approvals[i], id, rest
			}
		}
	}
	return nil, "", ""
}

// changed says whether report differs from the last one sent, and notes
// it as sent.
func (s *treeState) changed(report string) bool {
	if report == s.sent {
		return false
	}
	s.sent = report
	return true
}

// report is what this task, a sub-task of a tree, tells its parent now.
func (t *task) report() subTaskReport {
	r := subTaskReport{Child: t.life.id()}
	if t.durable == nil {
		return r
	}
	for _, a := range t.durable.pendingList() {
		r.Approvals = append(r.Approvals, cutArgs(a))
	}
	for _, a := range t.tree.pending() {
		r.Approvals = append(r.Approvals, cutArgs(a))
	}
	if st := t.durable.budgetStatus(t.budget); st != nil {
		spent := st.Used
		r.Spent = &spent
	}
	return r
}

// cutArgs is a with its arguments cut to maxReportedArgs (as a JSON string
// saying so).
func cutArgs(a contract.Approval) contract.Approval {
	if len(a.Arguments) > maxReportedArgs {
		b, _ := json.Marshal(fmt.Sprintf("%s… [cut: %d bytes; the sub-task %s lists them whole]", truncate(string(a.Arguments), maxReportedArgs), len(a.Arguments), a.TaskID))
		a.Arguments = b
	}
	return a
}

// watchTree runs for the run's lifetime under rules.nestedSubTasks: it
// takes the sub-tasks' reports and routed decisions, and, for a sub-task
// of a tree, reports to its parent whenever its report changes.
func (t *task) watchTree(ctx workflow.Context) {
	if !t.rules.nestedSubTasks {
		return
	}
	reports := workflow.GetSignalChannel(ctx, contract.SignalSubTaskReport)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var r subTaskReport
			if !reports.Receive(ctx, &r) {
				return
			}
			if t.tree.take(r) && r.Spent != nil {
				t.durable.spentBySubTask(r.Child, *r.Spent) // budget.go
			}
		}
	})
	routed := workflow.GetSignalChannel(ctx, contract.SignalDecideRouted)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var d contract.DecideArgs
			if !routed.Receive(ctx, &d) {
				return
			}
			t.applyRouted(ctx, d)
		}
	})
	parent := t.parent(ctx)
	if parent == "" {
		return
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var r subTaskReport
			var text string
			if err := workflow.Await(ctx, func() bool {
				if t.opening.restoring() {
					return false
				}
				r = t.report()
				b, _ := json.Marshal(r)
				text = string(b)
				return text != t.tree.sent
			}); err != nil {
				return
			}
			t.tree.changed(text)
			// Not waited for: a parent that ended has nothing to learn.
			workflow.SignalExternalWorkflow(ctx, parent, "", contract.SignalSubTaskReport, r)
		}
	})
}

// applyRouted applies a decision routed down the tree: routed further when
// its ID is a path, else decided here as the decide update would. A
// decision that no longer applies (decided meanwhile) is logged and
// dropped: the first decision stands.
func (t *task) applyRouted(ctx workflow.Context, d contract.DecideArgs) {
	if strings.Contains(d.ID, "/") {
		if _, child, rest := t.tree.find(d.ID); child != "" {
			d.ID = rest
			workflow.SignalExternalWorkflow(ctx, child, "", contract.SignalDecideRouted, d)
			return
		}
		t.logger.Warn("routed decision for an approval no sub-task waits for", "approval", d.ID)
		return
	}
	raw, err := jsonRawValue(d)
	if err == nil {
		var a *approvalRecord
		if d, a, err = t.durable.decodeDecide(raw, t.rules.clientTools); err == nil {
			t.durable.decideWith(ctx, a, d, t.life.id(), t.logger)
			return
		}
	}
	t.logger.Warn("routed decision not applied", "approval", d.ID, "error", err)
}

// routedWait bounds how long decide at a root waits for the sub-task's
// report that its decision was applied.
const routedWait = time.Minute

// decideRouted is decide for an approval of a sub-task (an ID with a
// path): the decision goes down the tree, and the reply is the approval as
// the sub-task's next report shows it (no longer pending), decided as
// asked.
func (t *task) decideRouted(ctx workflow.Context, d contract.DecideArgs) (contract.Approval, error) {
	a, child, rest := t.tree.find(d.ID)
	if a == nil {
		return contract.Approval{}, appError(&contract.Error{Type: contract.ErrApprovalNotFound, Message: fmt.Sprintf("no sub-task of the task waits for approval %q; the approvals query lists them", d.ID)})
	}
	out := *a
	out.ID = d.ID
	if out.TaskID == "" {
		out.TaskID = child
	}
	sub := d
	sub.ID = rest
	if err := workflow.SignalExternalWorkflow(ctx, child, "", contract.SignalDecideRouted, sub).Get(ctx, nil); err != nil {
		return contract.Approval{}, appError(&contract.Error{Type: contract.ErrApprovalNotFound, Message: fmt.Sprintf("the sub-task %s that waited for %q has ended", child, d.ID)})
	}
	applied, err := workflow.AwaitWithTimeout(ctx, routedWait, func() bool { x, _, _ := t.tree.find(d.ID); return x == nil })
	if err != nil {
		return contract.Approval{}, err
	}
	if !applied {
		return contract.Approval{}, appError(&contract.Error{Type: contract.ErrInternal, Message: fmt.Sprintf("the decision was sent to the sub-task %s, which did not confirm it within %s; the approvals query shows whether it applied", child, routedWait)})
	}
	out.Decision = &contract.Decision{Approve: *d.Approve, Reason: strings.TrimSpace(d.Reason), By: d.By, DecidedAt: contract.FormatTime(workflow.Now(ctx))}
	return out, nil
}
