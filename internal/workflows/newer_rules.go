package workflows

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"
)

// In a rolling deploy (or a rollback) workers of two builds poll one queue,
// so a run may meet a worker older than the rules that wrote its history or
// its carried state. Such a worker must not fail the task, nor go on under
// rules it does not know: it fails the workflow task (Temporal retries it,
// and a worker that knows the rules takes it) with a message that names the
// rules version the task needs, and /healthz says so until a newer worker
// took the task.

// RulesMemo is the memo key where a run records the rules version it
// follows (rules.rulesMemo); continue-as-new hands the memo to the next
// run, so the next run knows which rules wrote the state it carries.
const RulesMemo = "AgentRules"

// NewerRules is what a worker met that needs newer rules than it knows.
type NewerRules struct {
	TaskID string
	Needs  int // the rules version the task's history or carry follows
	Knows  int // the newest this worker knows (rulesLatest)
	Where  string
}

func (n NewerRules) Error() string {
	return fmt.Sprintf("task %s: its %s follows agent-task rules version %d; this worker knows rules up to %d: "+
		"run a worker of a newer build on the queue (the task waits, its workflow task retried, until one takes it; see docs/deploy.md)",
		n.TaskID, n.Where, n.Needs, n.Knows)
}

var newerRulesSeen struct {
	sync.Mutex
	last *NewerRules
	at   time.Time
}

// LastNewerRules is the last task this process met that needs newer rules,
// and when (nil when none): the worker's /healthz reports it.
func LastNewerRules() (*NewerRules, time.Time) {
	newerRulesSeen.Lock()
	defer newerRulesSeen.Unlock()
	return newerRulesSeen.last, newerRulesSeen.at
}

// failForNewerRules records n for /healthz and fails the workflow task with
// it: a panic in workflow code fails the workflow task, never the task.
// (Recording is a side effect outside the workflow's state: no decision
// reads it.)
func failForNewerRules(n NewerRules) {
	newerRulesSeen.Lock()
	newerRulesSeen.last = &n
	newerRulesSeen.at = time.Now() //workflowcheck:ignore reported on /healthz only, never read by a workflow
	newerRulesSeen.Unlock()
	panic(n)
}

// rulesVersion is the version this run follows: the newest for a new run,
// the recorded one on replay. A history recorded under newer rules than
// this worker knows fails the workflow task, naming the version needed
// (instead of the SDK's "too old to support version").
func rulesVersion(ctx workflow.Context) (v workflow.Version) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		msg := fmt.Sprint(p)
		if !strings.Contains(msg, "too old to support version") || !strings.Contains(msg, changeRules) {
			panic(p)
		}
		var needs int
		if _, err := fmt.Sscanf(msg[strings.Index(msg, "too old to support version"):], "too old to support version %d", &needs); err != nil {
			needs = -1
		}
		failForNewerRules(NewerRules{TaskID: workflow.GetInfo(ctx).WorkflowExecution.ID, Needs: needs, Knows: int(rulesLatest), Where: "history"})
	}()
	return workflow.GetVersion(ctx, changeRules, rulesGen1, rulesLatest)
}

// checkCarriedRules fails the workflow task of a run continued from a run
// on newer rules than this worker knows: its carry may hold state this
// worker would drop (a budget, a paused turn of a newer shape).
func checkCarriedRules(ctx workflow.Context, dc converter.DataConverter) {
	info := workflow.GetInfo(ctx)
	if info.ContinuedExecutionRunID == "" {
		return
	}
	if v := memoRules(info, dc); v > int(rulesLatest) {
		failForNewerRules(NewerRules{TaskID: info.WorkflowExecution.ID, Needs: v, Knows: int(rulesLatest), Where: "carried state"})
	}
}

// memoRules is the AgentRules memo's version, or 0 when none is recorded.
// dc is the worker's data converter (the memo is encrypted with the
// payloads when a codec is on); nil is the SDK's default.
func memoRules(info *workflow.Info, dc converter.DataConverter) int {
	if info.Memo == nil {
		return 0
	}
	p := info.Memo.GetFields()[RulesMemo]
	if p == nil {
		return 0
	}
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	var v int
	if err := dc.FromPayload(p, &v); err != nil {
		return 0
	}
	return v
}

// recordRules writes this run's rules version to the memo when the memo
// inherited from the previous run says otherwise (rules.rulesMemo).
func recordRules(ctx workflow.Context, rules rules, version workflow.Version, dc converter.DataConverter, logger log.Logger) {
	if !rules.rulesMemo || memoRules(workflow.GetInfo(ctx), dc) == int(version) {
		return
	}
	if err := workflow.UpsertMemo(ctx, map[string]any{RulesMemo: int(version)}); err != nil {
		logger.Warn("the rules memo was not recorded", "error", err)
	}
}
