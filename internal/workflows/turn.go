package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// Activity options, set at the call site. The model call heartbeats twice a
// second; a short heartbeat timeout both delivers cancel-turn promptly and
// moves the call to another worker soon after one dies. A turn may need three
// model requests (structured output) of up to five minutes each.
var (
	modelCallOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 20 * time.Minute,
		HeartbeatTimeout:    2 * time.Second,
		WaitForCancellation: false, // a canceled turn ends now; the call stops at its next heartbeat
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        8,
			NonRetryableErrorTypes: []string{contract.ErrModel, contract.ErrInvalidInput},
		},
	}
	writeOptions = workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
		},
	}
)

// turnState is the turn running now, and what turns have committed.
type turnState struct {
	running bool
	cancel  workflow.CancelFunc // cancels the running turn (cancel-turn)
	// committed counts the inputs this run committed; asks wait for the
	// turn that commits theirs (ask.go).
	committed int
	// unshown counts the last committed inputs no model call has shown
	// yet: a call the budget refuses hands them back (rules.trueReceipts),
	// keeping their instants in withheld until they commit again.
	unshown  int
	withheld []string
	// unanswered: the conversation this task continues ends with inputs
	// no output answered; the first turn answers them.
	unanswered bool
}

// committedNow counts n inputs committed for the running turn's next call.
func (ts *turnState) committedNow(n int) {
	ts.committed += n
	ts.unshown += n
}

// busy says a turn runs.
func (ts *turnState) busy() bool { return ts.running }

// owed says the first turn must answer the continued conversation's last
// inputs.
func (ts *turnState) owed() bool { return ts.unanswered }

// owe notes that the conversation this task continues ends with inputs no
// output answered: the first turn answers them.
func (ts *turnState) owe() { ts.unanswered = true }

// taken: the turn that answers them has begun.
func (ts *turnState) taken() { ts.unanswered = false }

// cancelFor stops the running turn (cancel-turn); with no turn running,
// or when the signal names another turn (a late one, for a turn already
// answered; 0 names whichever runs), it does nothing.
func (ts *turnState) cancelFor(named, current int, logger log.Logger) {
	if !ts.running || ts.cancel == nil {
		return
	}
	if named != 0 && named != current {
		logger.Info("cancel-turn for another turn: ignored", "turn", current, "named", named)
		return
	}
	logger.Info("cancel-turn requested", "turn", current)
	ts.cancel()
}

// runTurn commits every queued input at one instant, calls the model once
// (from the model's view: one turn), and commits its output. A canceled turn
// keeps its inputs committed and produces no output (docs/contract.md).
func (t *task) runTurn(ctx workflow.Context) error {
	paused := t.durable.pausedTurn()
	var turn, turnFrom int
	var info contract.TurnInfo
	if paused != nil {
		// An earlier run left this turn waiting for approvals: go on with it.
		turn, turnFrom, info = paused.Turn, paused.TurnFrom, paused.Info
	} else {
		t.turn.unshown, t.turn.withheld = 0, nil // a turn shows only its own inputs
		info, turnFrom = t.durable.beginTurn(workflow.Now(ctx))
		turn = info.Turn
		t.turn.committedNow(info.Inputs)
	}
	t.life.enter(contract.StateWorking)
	t.turn.running = true
	defer func() { t.turn.running = false }()
	logger := workflowLogger(t, turn)
	logger.Info("turn started", "inputs", info.Inputs)
	t.showDetails(ctx)

	turnCtx, cancel := workflow.WithCancel(ctx)
	t.turn.cancel = cancel
	defer func() { t.turn.cancel = nil; cancel() }()

	err := t.callModel(ctx, turnCtx, turn, turnFrom, &info, paused)
	t.life.enter(contract.StateWaiting)
	t.durable.touch(workflow.Now(ctx))
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		logger.Info("turn answered", "stop_reason", info.StopReason)
		countTurn(ctx, TurnAnswered)
	case ctx.Err() != nil:
		return nil // the whole task was canceled; run() reports it
	case errors.Is(err, errPaused):
		return err // waits for approvals in the next run (Carry.Paused)
	case errors.As(err, &canceled) || turnCtx.Err() != nil || errors.Is(err, errBudgetClosed):
		t.announceTurnEnd(ctx, turn, contract.ErrTurnCanceled, "the turn was canceled: its inputs stay committed, and it has no answer") // events.go
		info.Canceled = true
		t.durable.recordTurn(info)
		t.asks.failAll(t.turn.committed, contract.ErrTurnCanceled, "the turn answering this input was canceled (cancel-turn)")
		logger.Info("turn canceled; its inputs stay committed")
		countTurn(ctx, TurnCanceled)
	case isBudgetExceeded(err):
		countTurn(ctx, TurnFailed)
		t.announceTurnEnd(ctx, turn, contract.ErrBudgetExceeded, contract.MessageOf(err))
		return err // with its details (budget.go)
	default:
		countTurn(ctx, TurnFailed)
		return unwrapActivityError(err)
	}
	t.showDetails(ctx)
	return nil
}

// callModel calls the model until it answers: each call that asks for
// capabilities runs them, commits the inputs queued meanwhile, and calls
// again with the exchange so far (bounded by maxCapabilityRounds). paused,
// when set, is this turn as an earlier run left it, waiting for approvals.
func (t *task) callModel(ctx, turnCtx workflow.Context, turn, turnFrom int, info *contract.TurnInfo, paused *pausedTurn) error {
	var scratch []activities.ScratchMessage
	var usage contract.Usage
	numbered := 0 // capability calls of this turn so far: approval IDs
	round := 1
	step := 0 // model calls of this turn so far (modelCall)
	if paused != nil {
		scratch, usage, numbered, round, step = paused.Scratch, paused.Usage, paused.Numbered+len(paused.Calls), paused.Round, paused.Step
		t.durable.resumed()
	}
	for ; ; round++ {
		p := paused
		paused = nil
		if p == nil {
			res, err := t.modelCall(turnCtx, turn, round, &step, &turnFrom, scratch, info)
			if err != nil {
				return err
			}
			usage = usage.Add(res.Usage.Usage)
			if len(res.ToolCalls) == 0 {
				out := t.durable.commitOutput(workflow.Now(ctx), turn, info, *res, t.rules.savedByRef, t.secrets())
				info.Usage = usage // the whole turn's, capability rounds included
				t.durable.recordTurn(*info)
				t.asks.answer(t.turn.committed, out, *info)
				return nil
			}
			scratch = append(scratch, activities.ScratchMessage{At: t.durable.length(), ToolCalls: res.ToolCalls})
			p = &pausedTurn{Turn: turn, TurnFrom: turnFrom, Round: round, Step: step, Info: *info, Numbered: numbered,
				Calls: res.ToolCalls, Offered: res.Offered,
				Results: make([]*activities.ScratchMessage, len(res.ToolCalls)), Approvals: make([]string, len(res.ToolCalls))}
			numbered += len(res.ToolCalls)
			if err := t.startCalls(turnCtx, p, *res); err != nil {
				return err
			}
		}
		p.Scratch, p.Usage, p.Info = scratch, usage, *info
		if err := t.finishCalls(ctx, turnCtx, p); err != nil {
			return err
		}
		scratch = withResults(scratch, p.Results, t.durable.length())
		// Inputs queued while the capabilities ran commit with the next call.
		if t.durable.queued() > 0 {
			turnFrom = t.durable.length()
			info.Inputs += t.turn.commitQueue(t.durable, t.durable.nextInstant(workflow.Now(ctx)))
			t.durable.recordTurn(*info)
		}
	}
}

// commitQueue commits every queued input of c at instant at, in the order
// they were queued, and says how many there were.
func (ts *turnState) commitQueue(c *Carry, at string) int {
	n := c.commitQueued(at)
	ts.committedNow(n)
	return n
}

// startCalls takes a response's tool calls (p.Calls): the round's usage is
// counted, and the calls that need no approval run at once, in order; the
// others wait for their approval (finishCalls).
func (t *task) startCalls(turnCtx workflow.Context, p *pausedTurn, res activities.ModelTurnResult) error {
	t.durable.allDurable()
	t.durable.addUsage(res.Usage.Usage)
	if p.Round > maxCapabilityRounds {
		return &contract.Error{Type: contract.ErrModel, Message: fmt.Sprintf("the model kept calling capabilities: %d rounds in one turn", p.Round)}
	}
	workflowLogger(t, p.Turn).Info("running capabilities", "calls", len(p.Calls), "round", p.Round)
	for i, call := range p.Calls {
		if r, ok := t.answerAtOnce(turnCtx, p, i, call); ok {
			p.Results[i] = r
		} else if p.Approvals[i] == "" {
			if err := t.runCall(turnCtx, p, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// finishCalls waits for the response's approvals, then runs the approved
// calls and answers the refused ones with the reason.
func (t *task) finishCalls(ctx, turnCtx workflow.Context, p *pausedTurn) error {
	if err := t.awaitApprovals(ctx, turnCtx, p); err != nil {
		if errors.Is(err, errPaused) {
			return err
		}
		if turnCtx.Err() != nil {
			return temporal.NewCanceledError()
		}
		return err
	}
	for i := range p.Calls {
		if p.Results[i] != nil {
			continue
		}
		if a := t.durable.approval(p.Approvals[i]); a != nil && a.Decision != nil && !a.Decision.Approve {
			p.Results[i] = &activities.ScratchMessage{ToolCallID: p.Calls[i].ID, Content: deniedResult(a)}
			continue
		} else if a != nil && a.Client {
			p.Results[i] = t.clientResult(ctx, a, p.Calls[i])
			continue
		}
		if err := t.runCall(turnCtx, p, i); err != nil {
			return err
		}
	}
	return nil
}

// withResults adds a response's results to the turn's exchange, at
// position at; past maxScratchBytes a result is replaced by a note.
func withResults(scratch []activities.ScratchMessage, results []*activities.ScratchMessage, at int) []activities.ScratchMessage {
	for _, r := range results {
		r.At = at
		if b, _ := json.Marshal(scratch); len(b) > maxScratchBytes {
			r.Content, r.Files = "[result omitted: this turn's capability results are over the size bound; answer with what you have]", nil
		}
		scratch = append(scratch, *r)
	}
	return scratch
}

// fileSpace is the task ID a model call names for its files: empty when
// it is the transcript's (the activity reads that one then), so most calls
// do not carry the ID twice.
func fileSpace(taskID string, transcript activities.TranscriptKey) string {
	if taskID == transcript.TaskID {
		return ""
	}
	return taskID
}

// modelCall is one ModelTurn activity of the turn. turnFrom is where the
// inputs this call shows for the first time begin; info is the turn's.
//
// step counts the turn's model calls (rules.streamAll): each call made,
// a budget wait's repeat included, takes the next.
func (t *task) modelCall(turnCtx workflow.Context, turn, round int, step *int, turnFrom *int, scratch []activities.ScratchMessage, info *contract.TurnInfo) (*activities.ModelTurnResult, error) {
	entries, err := spill(turnCtx, t.durable, t.rules.namedTimers)
	if err != nil {
		return nil, err
	}
	agent, agentRef := t.durable.agentForCall(t.args.Agent)
	in := activities.ModelTurnInput{
		TurnContext: &activities.TurnContext{Transcript: t.durable.transcriptKey(), Agent: agent, AgentRef: agentRef, Builtins: t.args.Output != nil,
			OwnFrom: t.durable.ownFrom(), TaskID: fileSpace(t.life.id(), t.durable.transcriptKey()), Stream: t.streams(turnCtx), MCPTools: t.mcp.listed()},
		Turn: turn, Entries: entries, End: t.durable.length(), TurnFrom: *turnFrom, Scratch: scratch, Recall: t.durable.recall(t.secrets()),
		Retry: t.waitOut().retry(fmt.Sprintf("model:t%d:r%d", turn, round))}
	in.Variables, in.Secrets = t.durable.variables(&t.args)
	in.Variables = activities.UsedVariables(t.args.Agent.Instructions, in.Variables)
	t.durable.largeValues(t.rules.savedByRef, &in) // secrets.go: large saved values go by reference (rules.savedByRef)
	if t.rules.windowHint {
		in.WindowFrom = t.durable.windowHint()
	}
	if t.rules.contextByRef {
		t.shared.share(&in) // turn_context.go: what the run's calls share, by digest
	}
	o := t.waitOut().options(modelCallOptions, 30*time.Second)
	o.Summary = fmt.Sprintf("model %s · turn %d", t.args.Agent.Model, turn)
	if round > 1 {
		o.Summary += fmt.Sprintf(" · round %d", round)
	}
	actx := workflow.WithActivityOptions(turnCtx, o)
	var refused contract.Usage // what calls the budget stopped used before: the turn's too
	for {
		in.Budget = t.durable.budgetCheck() // budget.go: nil without a budget
		if t.rules.streamAll {
			*step++
			in.Step = *step
		}
		var res activities.ModelTurnResult
		done := t.outages.waiting(in.Call)
		err = workflow.ExecuteActivity(actx, activities.ModelTurnName, in).Get(turnCtx, &res)
		done()
		if err != nil {
			chargeFailed(t.durable, t.rules.chargeFailures, err) // budget.go
			return nil, err
		}
		t.durable.chargeBudget(res.Usage)
		if res.BudgetShort == nil {
			t.turn.unshown = 0 // the model was shown every committed input
			if t.rules.windowHint {
				t.durable.keepWindow(res.WindowFrom)
			}
			res.Usage.Usage = res.Usage.Add(refused)
			return &res, nil
		}
		// The budget refused the call's request: what it used before is
		// counted (in the budget now, in usage with the call's result), and
		// the call is made again once a raise makes room.
		refused = refused.Add(res.Usage.Usage)
		if !t.rules.trueReceipts {
			if err := t.awaitBudget(turnCtx, turnCtx, *res.BudgetShort, true); err != nil {
				return nil, err
			}
			continue
		}
		// The model was not shown this call's inputs: they wait
		// uncommitted (docs/contract.md's read receipt) until the call is made.
		t.turn.uncommit(t.durable, info)
		if err := t.awaitBudget(turnCtx, turnCtx, *res.BudgetShort, true); err != nil {
			if turnCtx.Err() != nil || errors.Is(err, errBudgetClosed) {
				t.turn.recommit(t.durable, workflow.Now(turnCtx), info, false) // a canceled turn commits its inputs (docs/contract.md)
			}
			return nil, err
		}
		if t.durable.queued() > 0 {
			*turnFrom = t.durable.length()
			t.turn.recommit(t.durable, workflow.Now(turnCtx), info, true) // with whatever arrived meanwhile
		}
		if in.Entries, err = spill(turnCtx, t.durable, t.rules.namedTimers); err != nil {
			return nil, err
		}
		in.End, in.TurnFrom = t.durable.length(), *turnFrom
	}
}

// uncommit hands the inputs committed for a call the model was not shown
// back to the front of the queue, without committed_at (rules.trueReceipts).
// Their instants are kept: the call already wrote them to the transcript,
// whose entries are written once, so they commit again at the same instant.
func (ts *turnState) uncommit(c *Carry, info *contract.TurnInfo) {
	n := ts.unshown
	if n == 0 {
		return
	}
	ts.withheld = append(ts.withheld, c.uncommitLast(n)...)
	ts.committed -= n
	ts.unshown = 0
	info.Inputs -= n
	c.recordTurn(*info)
}

// recommit commits the inputs uncommit handed back, at their instants, and
// with all, every other queued input at a fresh one.
func (ts *turnState) recommit(c *Carry, now time.Time, info *contract.TurnInfo, all bool) {
	w := ts.withheld
	ts.withheld = nil
	n := c.commitNext(w)
	ts.committedNow(n)
	info.Inputs += n
	if all && c.queued() > 0 {
		info.Inputs += ts.commitQueue(c, c.nextInstant(now))
	}
	c.recordTurn(*info)
}

// answerAtOnce answers call i without running a capability when it can: a
// built-in, a capability not offered, arguments that do not fit. A call
// that needs approval gets its approval recorded (no result yet, false).
func (t *task) answerAtOnce(ctx workflow.Context, p *pausedTurn, i int, call activities.ToolCall) (*activities.ScratchMessage, bool) {
	if i >= contract.MaxCallsPerResponse && t.rules.callsPerResponse {
		return &activities.ScratchMessage{ToolCallID: call.ID, Content: fmt.Sprintf(
			"error: this response made %d tool calls; at most %d of one response run, and this one (number %d) did not: call it again in your next response if you still need it", len(p.Calls), contract.MaxCallsPerResponse, i+1)}, true
	}
	if t.args.Output != nil {
		if content, ok := builtin(t.durable, call, t.rules, t.secrets()); ok {
			return &activities.ScratchMessage{ToolCallID: call.ID, Content: content}, true
		}
	}
	if p.Offered != nil && !offered(p.Offered, call.Name) { // nil: a result recorded before the list existed
		return &activities.ScratchMessage{ToolCallID: call.ID, Content: fmt.Sprintf("error: the capability %q is not available now", call.Name)}, true
	}
	c := calledCapability(&t.args.Agent, &t.mcp, call.Name)
	if c == nil {
		return nil, false // runCall answers it
	}
	if msg := checkCallArguments(t.agent, t.rules, c, call.Arguments); msg != "" {
		return &activities.ScratchMessage{ToolCallID: call.ID, Content: msg}, true
	}
	if t.rules.clientTools && c.Kind == contract.CapabilityClient || // its client runs it
		needsApproval(t.rules.approvals, c, call.Arguments, &t.durable.collectedRecord, &t.args, t.logger) || t.mcp.needsApproval(t.rules.mcpHints, c, call.Name) {
		p.Approvals[i] = t.requestApproval(ctx, p.Turn, p.Numbered+i+1, c, call)
	}
	return nil, false
}

// runCall runs call i of the response and keeps its result.
func (t *task) runCall(turnCtx workflow.Context, p *pausedTurn, i int) error {
	r := t.runCapability(turnCtx, p.Turn, (p.Round-1)*100+i, p.Step, fmt.Sprintf("t%d.c%d", p.Turn, p.Numbered+i+1), p.Calls[i])
	if turnCtx.Err() != nil {
		return temporal.NewCanceledError()
	}
	p.Results[i] = &r
	return nil
}

// offered reports whether the model was offered the capability it called.
func offered(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// spill writes committed entries that would make the model call's argument
// too large in separate calls first, so no payload grows past the bound
// (namedTimers: rules.namedTimers, the calls' summaries).
func spill(ctx workflow.Context, c *Carry, namedTimers bool) (activities.Entries, error) {
	entries := c.pendingEntries()
	for {
		b, _ := json.Marshal(entries)
		if len(b) <= activities.MaxEntriesBytes || len(entries.Write) <= 1 {
			return entries, nil
		}
		// Send a leading chunk of whole entries, then look again.
		var chunk activities.Entries
		chunk.Stamps, entries.Stamps = entries.Stamps, nil
		size := 0
		for len(entries.Write) > 0 {
			eb, _ := json.Marshal(entries.Write[0])
			if len(chunk.Write) > 0 && size+len(eb) > activities.MaxEntriesBytes/2 {
				break
			}
			chunk.Write = append(chunk.Write, entries.Write[0])
			entries.Write = entries.Write[1:]
			size += len(eb)
		}
		o := writeOptions
		if namedTimers {
			o.Summary = fmt.Sprintf("write %d entries to the transcript", len(chunk.Write)+len(chunk.Stamps))
		}
		wctx := workflow.WithActivityOptions(ctx, o)
		in := activities.WriteEntriesInput{Transcript: c.transcriptKey(), Entries: chunk}
		if err := workflow.ExecuteActivity(wctx, activities.WriteEntriesName, in).Get(ctx, nil); err != nil {
			return entries, err
		}
	}
}

// passThroughTypes keep their type when an activity fails with them.
var passThroughTypes = map[string]bool{
	contract.ErrInvalidInput: true, contract.ErrModel: true, contract.ErrInternal: true,
	contract.ErrGuardrail: true, contract.ErrFileNotFound: true, contract.ErrFileChanged: true,
}

// unwrapActivityError turns an activity failure into the task's typed error.
func unwrapActivityError(err error) error {
	var se *contract.Error
	if errors.As(err, &se) {
		return se
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		typ := ae.Type()
		if !passThroughTypes[typ] {
			typ = contract.ErrModel // e.g. a transient model failure that outlived its retries
		}
		return &contract.Error{Type: typ, Message: ae.Message()}
	}
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		return &contract.Error{Type: contract.ErrModel, Message: "an activity of the task timed out: " + te.Error()}
	}
	return &contract.Error{Type: contract.ErrModel, Message: err.Error()}
}
