package workflows

import (
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
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
	carrying *contract.ContinueFrom
	// largeValues names the start argument's collected values kept whole
	// by reference before the first turn (rules.collectedRefs).
	largeValues []string
	// input is the start input, which waits for its arrival check.
	input *contract.Message
	// worker is the worker's configuration, once DescribeWorker ran in
	// this run (mounts.go).
	worker *activities.WorkerDescription
}

// setup reads the run's rules, begins the run in one of the three ways a
// run begins, and registers the message handlers. A refusal fails the task
// in its first workflow task, before any model call.
func (t *task) setup(ctx workflow.Context, raw converter.RawValue) error {
	version := rulesVersion(ctx) // newer_rules.go: a history of newer rules fails the workflow task
	checkCarriedRules(ctx, t.dc) // and so does a carry written under newer rules
	t.rules = rulesFor(version)
	t.outages.start(func() {
		trackAgentState(t.life.rootContext(), &t.life, t.rules.agentStateAttribute && t.durable != nil, t.outages.retrying() != nil, t.logger)
	})
	t.life.start(ctx)
	t.continuing.start(ctx)
	if err := t.begin(ctx, raw); err != nil {
		return appError(err)
	}
	recordRules(ctx, t.rules, version, t.dc, t.logger)
	return t.registerHandlers(ctx)
}

// begin tells the three ways apart: a new task, a run continued as new
// (the state in its start argument), a run whose state the previous one
// stored by reference (restored from the stash).
func (t *task) begin(ctx workflow.Context, raw converter.RawValue) error {
	if ref := carryRefOf(raw); ref != nil && t.rules.carryByRef {
		// The state the previous run stored by reference is read back by
		// run() before anything else (restoreStashed, which then resumes
		// from it as below for an inline carry).
		if workflow.GetInfo(ctx).ContinuedExecutionRunID == "" {
			return contract.Invalid("carryRef is written by the runtime when a task continues as new; leave it out")
		}
		t.opening.restore = ref
		t.life.enter(contract.StateWorking)
		t.logger = log.With(workflow.GetLogger(ctx), "task_id", t.life.id())
		return nil
	}
	args, agent, err := decodeStart(raw, t.rules)
	if err == nil && t.rules.ownActivityQueue && !t.rules.sharedQueue && args.Carry == nil {
		err = checkTaskQueue(args.Agent, workflow.GetInfo(ctx).TaskQueueName, t.rules)
	}
	if err == nil && args.Stream {
		err = CheckStreamID(t.life.id())
	}
	switch {
	case err != nil:
		return err
	case args.Carry != nil && workflow.GetInfo(ctx).ContinuedExecutionRunID == "":
		return contract.Invalid("carry is written by the runtime when a task continues as new; leave it out")
	case args.Carry != nil:
		// Goes on from the state the previous run carried in the start
		// argument.
		t.resumeFrom(ctx, args, agent)
		return nil
	}
	t.beginNew(ctx, args, agent)
	return nil
}

// beginNew starts a new task from its start argument: a fresh state, or
// the conversation of the earlier task it continues (rescue, resume), then
// its history, its input and its collected values.
func (t *task) beginNew(ctx workflow.Context, args *StartArgs, agent *contract.Agent) {
	t.args, t.agent = *args, agent
	t.life.setIdle(args.IdleTimeout)
	info := workflow.GetInfo(ctx)
	t.durable = newCarry(workflow.Now(ctx))
	if t.rules.secretPrints {
		t.durable.keepPrints(*args)
	}
	t.durable.inTranscript(activities.TranscriptKey{TaskID: info.WorkflowExecution.ID, FirstRunID: info.FirstRunID})
	if c := args.Continue; c != nil {
		t.continueFrom(*c, info.WorkflowExecution.ID, info.FirstRunID)
	}
	t.durable.commitHistory(t.args.History, workflow.Now(ctx))
	t.args.History = nil // in the state now: not carried twice
	if args.Input != nil {
		in, id, _ := splitInputID(*args.Input, t.rules) // admitted by decodeStart
		m := t.receive(ctx, admission{in: in, id: id})
		t.opening.input = &m
	}
	for _, n := range t.durable.startCollected(args, t.rules.collectedRefs, t.secrets()) {
		t.opening.keepLarge(n) // keepStartValues
	}
	t.durable.startBudget(t.rules.spendBudget, args.Budget) // budget.go
	t.ready(ctx)
}

// resumeFrom takes the start argument of a run continued as new, and the
// state it carries, as this run's.
func (t *task) resumeFrom(ctx workflow.Context, args *StartArgs, agent *contract.Agent) {
	t.args, t.agent = *args, agent
	t.life.setIdle(args.IdleTimeout)
	t.durable = args.Carry
	t.durable.continued()
	t.ready(ctx)
}

// ready completes the run's setup once its state is known.
func (t *task) ready(ctx workflow.Context) {
	t.args.Carry = nil
	t.arrivals.start(t.durable.queued(), t.args.Agent.Guardrails)
	t.life.enter(contract.StateWaiting)
	t.logger = log.With(workflow.GetLogger(ctx), "task_id", t.life.id(), "run", t.durable.run())
}

// open does what comes before the first turn: refuse unlisted storage,
// list the MCP tools, store a large agent spec, keep large start values by reference, copy the
// carried conversation's files, learn the output model, and check the
// start input (part of the start argument: a refusal fails the task).
func (t *task) open(ctx workflow.Context) error {
	if err := t.checkTreeDepth(ctx); err != nil { // tree.go
		return err
	}
	if err := t.checkMounts(ctx); err != nil {
		return err
	}
	if err := t.listMCPTools(ctx); err != nil {
		return err
	}
	if err := stashAgent(ctx, t.durable, t.args.Agent, t.rules.agentByRef); err != nil {
		return err
	}
	t.keepStartValues(ctx)
	if t.opening.carrying != nil {
		if err := t.carryFiles(ctx); err != nil {
			return err
		}
	}
	if t.args.Output != nil && t.durable.outputModel() == "" {
		if err := t.startOutput(ctx); err != nil {
			return err
		}
	}
	if t.opening.input != nil {
		if _, err := t.arrive(ctx, *t.opening.input); err != nil {
			return err
		}
	}
	return nil
}

// keepLarge notes a start value to keep whole by reference before the
// first turn.
func (o *opening) keepLarge(name string) { o.largeValues = append(o.largeValues, name) }

// takeLargeValues hands over the start values to keep by reference, once.
func (o *opening) takeLargeValues() []string {
	names := o.largeValues
	o.largeValues = nil
	return names
}

// carry notes the conversation whose files are copied in first.
func (o *opening) carry(c *contract.ContinueFrom) { o.carrying = c }

// takeCarrying hands over the conversation whose files to copy, once.
func (o *opening) takeCarrying() *contract.ContinueFrom {
	c := o.carrying
	o.carrying = nil
	return c
}

// restoring reports whether the state stored by reference is still to be
// read back; restoreRef names it.
func (o *opening) restoring() bool                 { return o.restore != nil }
func (o *opening) restoreRef() activities.StashRef { return *o.restore }

// restored: the stored state has been read back.
func (o *opening) restored() { o.restore = nil }

// knownWorker is the worker's configuration once DescribeWorker ran in
// this run; learnWorker records it.
func (o *opening) knownWorker() *activities.WorkerDescription  { return o.worker }
func (o *opening) learnWorker(d *activities.WorkerDescription) { o.worker = d }
