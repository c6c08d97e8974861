package workflows

import (
	"sort"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/guard"
)

// opening is what setup leaves for run() to do before the first turn, and
// what those steps learn.
type opening struct {
	// restore names the state a previous run stored by reference: this
	// run reads it back first (largestate.go). Updates accepted meanwhile
	// are checked by their handler once it is read (afterRestore).
	restore *activities.StashRef
	// carrying is the conversation this task continues, whose files are
	// copied into its own space before anything else (first run only).
	carrying *ContinueFrom
	// largeValues names the start argument's collected values kept whole
	// by reference before the first turn (rules.collectedRefs).
	largeValues []string
	// input is the start input, which waits for its arrival check.
	input *contract.Message
	// worker is the worker's configuration, once DescribeWorker ran in
	// this run (mounts.go).
	worker *activities.WorkerDescription
}

// setup validates the start argument (or restores the previous run's state)
// and registers the message handlers. A refusal fails the task in its first
// workflow task, before any model call.
func (t *task) setup(ctx workflow.Context, raw converter.RawValue) error {
	t.rules = rulesFor(rulesVersion(ctx))
	t.outages.calls, t.arrivals.pending = map[string]bool{}, map[string]*pendingInput{}
	info := workflow.GetInfo(ctx)
	t.life.root, t.life.agentState = ctx, knownAgentState(ctx)
	if ref := carryRefOf(raw); ref != nil && t.rules.carryByRef {
		if info.ContinuedExecutionRunID == "" {
			return appError(contract.Invalid("carryRef is written by the runtime when a task continues as new; leave it out"))
		}
		// The state is read back by run() before anything else.
		t.opening.restore, t.life.taskID = ref, info.WorkflowExecution.ID
		t.life.state = StateWorking
		t.continuing.drainReq = workflow.NewBufferedChannel(ctx, 1)
		t.logger = log.With(workflow.GetLogger(ctx), "task_id", info.WorkflowExecution.ID)
		return t.registerHandlers(ctx)
	}
	args, agent, err := decodeStart(raw, t.rules)
	if err == nil && t.rules.ownActivityQueue && args.Carry == nil {
		err = checkTaskQueue(args.Agent, info.TaskQueueName)
	}
	if err != nil {
		return appError(err)
	}
	t.adopt(args, agent)
	now := workflow.Now(ctx)
	t.life.taskID = info.WorkflowExecution.ID
	if args.Stream {
		if err := CheckStreamID(t.life.taskID); err != nil {
			return appError(err)
		}
	}
	if args.Carry != nil {
		if info.ContinuedExecutionRunID == "" {
			return appError(contract.Invalid("carry is written by the runtime when a task continues as new; leave it out"))
		}
		t.resume(args.Carry)
	} else {
		t.durable = newCarry(now)
		if t.rules.secretPrints {
			t.durable.SecretPrints = printsOf(*args)
		}
		t.durable.Transcript = activities.TranscriptKey{TaskID: info.WorkflowExecution.ID, FirstRunID: info.FirstRunID}
		if c := args.Continue; c != nil {
			t.continueFrom(*c, info.WorkflowExecution.ID, info.FirstRunID)
		}
		t.startHistory(ctx)
		t.arrivals.queued = len(t.durable.Queue)
		if args.Input != nil {
			in, id, _ := splitInputID(*args.Input, t.rules) // checked by decodeStart
			m := t.received(ctx, in)
			t.remember(id, m.ReceivedAt)
			t.opening.input = &m
		}
		names := make([]string, 0, len(args.Collected))
		for n := range args.Collected {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			t.save(n, args.Collected[n]) // recalled as already collected (bounded, secrets masked)
			v := args.Collected[n]
			fromEarlier := args.Continue != nil && args.Continue.CollectedRefs[n].Stash != ""
			if t.rules.collectedRefs && (fromEarlier || (len(v) > maxSavedBytes && len(v) <= activities.MaxSavedValueBytes)) {
				t.opening.largeValues = append(t.opening.largeValues, n) // kept whole by reference before the first turn
			}
		}
	}
	t.ready(ctx)
	t.continuing.drainReq = workflow.NewBufferedChannel(ctx, 1)
	return t.registerHandlers(ctx)
}

// adopt takes a checked start argument as this run's.
func (t *task) adopt(args *StartArgs, agent *contract.Agent) {
	t.args, t.agent = *args, agent
	t.life.idle = DefaultIdleTimeout
	if args.IdleTimeout != "" {
		t.life.idle, _ = time.ParseDuration(args.IdleTimeout) // checked by DecodeStart
	}
}

// resume continues from the state the previous run carried.
func (t *task) resume(c *Carry) {
	t.durable = c
	t.durable.Run++
	t.arrivals.queued = len(t.durable.Queue)
}

// ready completes the run's setup once its state is known.
func (t *task) ready(ctx workflow.Context) {
	t.args.Carry = nil
	t.arrivals.contextGuards = guard.AnyReadsContext(t.args.Agent.Guardrails)
	t.life.state = StateWaiting
	t.logger = log.With(workflow.GetLogger(ctx), "task_id", workflow.GetInfo(ctx).WorkflowExecution.ID, "run", t.durable.Run)
}
