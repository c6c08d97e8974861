package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/guard"
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

// runTurn commits every queued input at one instant, calls the model once
// (from the model's view: one turn), and commits its output. A canceled turn
// keeps its inputs committed and produces no output (seed 000).
func (t *task) runTurn(ctx workflow.Context) error {
	s := t.durable
	paused := s.Paused
	var turn, turnFrom int
	var info TurnInfo
	if paused != nil {
		// An earlier run left this turn waiting for approvals: go on with it.
		turn, turnFrom, info = paused.Turn, paused.TurnFrom, paused.Info
	} else {
		t.turn.unshown, t.turn.withheld = 0, nil // a turn shows only its own inputs
		s.Turns++
		turn = s.Turns
		turnFrom = s.length()
		committedAt := s.nextInstant(workflow.Now(ctx))
		info = TurnInfo{Turn: turn, CommittedAt: committedAt}
		info.Inputs = t.commitQueue(committedAt)
		s.recordTurn(info)
	}
	t.life.state, t.turn.running = StateWorking, true
	defer func() { t.turn.running = false }()
	logger := workflowLogger(t, turn)
	logger.Info("turn started", "inputs", info.Inputs)
	t.showDetails(ctx)

	turnCtx, cancel := workflow.WithCancel(ctx)
	t.turn.cancel = cancel
	defer func() { t.turn.cancel = nil; cancel() }()

	err := t.callModel(ctx, turnCtx, turn, turnFrom, &info, paused)
	t.life.state = StateWaiting
	s.LastActivity = contract.FormatTime(workflow.Now(ctx))
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		logger.Info("turn answered", "stop_reason", info.StopReason)
		t.countTurn(ctx, TurnAnswered)
	case ctx.Err() != nil:
		return nil // the whole task was canceled; run() reports it
	case errors.Is(err, errPaused):
		return err // waits for approvals in the next run (Carry.Paused)
	case errors.As(err, &canceled) || turnCtx.Err() != nil || errors.Is(err, errBudgetClosed):
		info.Canceled = true
		s.recordTurn(info)
		t.failAsks(true, ErrTurnCanceled, "the turn answering this input was canceled (cancel-turn)")
		logger.Info("turn canceled; its inputs stay committed")
		t.countTurn(ctx, TurnCanceled)
	case isBudgetExceeded(err):
		t.countTurn(ctx, TurnFailed)
		return err // with its details (budget.go)
	default:
		t.countTurn(ctx, TurnFailed)
		return unwrapActivityError(err)
	}
	t.showDetails(ctx)
	return nil
}

// callModel calls the model until it answers: each call that asks for
// capabilities runs them, commits the inputs queued meanwhile, and calls
// again with the exchange so far (bounded by maxCapabilityRounds). paused,
// when set, is this turn as an earlier run left it, waiting for approvals.
func (t *task) callModel(ctx, turnCtx workflow.Context, turn, turnFrom int, info *TurnInfo, paused *pausedTurn) error {
	s := t.durable
	var scratch []activities.ScratchMessage
	var usage Usage
	numbered := 0 // capability calls of this turn so far: approval IDs
	round := 1
	if paused != nil {
		scratch, usage, numbered, round = paused.Scratch, paused.Usage, paused.Numbered+len(paused.Calls), paused.Round
		s.Paused = nil
	}
	for ; ; round++ {
		p := paused
		paused = nil
		if p == nil {
			res, err := t.modelCall(turnCtx, turn, round, &turnFrom, scratch, info)
			if err != nil {
				return err
			}
			usage = usage.Add(Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, CacheReadTokens: res.Usage.CacheReadTokens, CacheWriteTokens: res.Usage.CacheWriteTokens})
			if len(res.ToolCalls) == 0 {
				t.commitOutput(ctx, turn, info, *res)
				info.Usage = usage // the whole turn's, capability rounds included
				s.recordTurn(*info)
				t.answerAsks(s.at(s.LastOutputPos).Msg.TaskIO, *info)
				return nil
			}
			scratch = append(scratch, activities.ScratchMessage{At: s.length(), ToolCalls: res.ToolCalls})
			p = &pausedTurn{Turn: turn, TurnFrom: turnFrom, Round: round, Info: *info, Numbered: numbered,
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
		scratch = withResults(scratch, p.Results, s.length())
		// Inputs queued while the capabilities ran commit with the next call.
		if len(s.Queue) > 0 {
			turnFrom = s.length()
			info.Inputs += t.commitQueue(s.nextInstant(workflow.Now(ctx)))
			s.recordTurn(*info)
		}
	}
}

// commitQueue commits every queued input at instant at, in the order they
// were queued, and says how many there were.
func (t *task) commitQueue(at string) int {
	s := t.durable
	n := len(s.Queue)
	for _, in := range s.Queue {
		in.CommittedAt = at
		s.Held = append(s.Held, heldEntry{Msg: in})
	}
	t.turn.committed += n
	t.turn.unshown += n
	s.Queue = nil
	return n
}

// startCalls takes a response's tool calls (p.Calls): the round's usage is
// counted, and the calls that need no approval run at once, in order; the
// others wait for their approval (finishCalls).
func (t *task) startCalls(turnCtx workflow.Context, p *pausedTurn, res activities.ModelTurnResult) error {
	s := t.durable
	s.Durable = s.length()
	s.Usage = s.Usage.Add(Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, CacheReadTokens: res.Usage.CacheReadTokens, CacheWriteTokens: res.Usage.CacheWriteTokens})
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
		if a := t.approval(p.Approvals[i]); a != nil && a.Decision != nil && !a.Decision.Approve {
			p.Results[i] = &activities.ScratchMessage{ToolCallID: p.Calls[i].ID, Content: deniedResult(a)}
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
func (t *task) fileSpace() string {
	if t.life.taskID == t.durable.Transcript.TaskID {
		return ""
	}
	return t.life.taskID
}

// modelCall is one ModelTurn activity of the turn. turnFrom is where the
// inputs this call shows for the first time begin; info is the turn's.
func (t *task) modelCall(turnCtx workflow.Context, turn, round int, turnFrom *int, scratch []activities.ScratchMessage, info *TurnInfo) (*activities.ModelTurnResult, error) {
	s := t.durable
	entries, err := t.spill(turnCtx)
	if err != nil {
		return nil, err
	}
	agent, agentRef := t.agentForCall()
	in := activities.ModelTurnInput{
		TurnContext: &activities.TurnContext{Transcript: s.Transcript, Agent: agent, AgentRef: agentRef, Builtins: t.args.Output != nil,
			OwnFrom: s.OwnFrom, TaskID: t.fileSpace(), Stream: t.args.Stream, MCPTools: t.mcp.tools},
		Turn: turn, Entries: entries, End: s.length(), TurnFrom: *turnFrom, Scratch: scratch, Recall: t.recall(),
		Retry: t.retry(fmt.Sprintf("model:t%d:r%d", turn, round))}
	in.Variables, in.Secrets = t.variables()
	in.Variables = activities.UsedVariables(t.args.Agent.Instructions, in.Variables)
	t.largeValues(&in) // output.go: large saved values go by reference (rules.savedByRef)
	if t.rules.windowHint {
		in.WindowFrom = s.WindowFrom
	}
	if t.rules.contextByRef {
		t.shareContext(&in) // turn_context.go: what the run's calls share, by digest
	}
	o := t.waitingOptions(modelCallOptions, 30*time.Second)
	o.Summary = fmt.Sprintf("model %s · turn %d", t.args.Agent.Model, turn)
	if round > 1 {
		o.Summary += fmt.Sprintf(" · round %d", round)
	}
	actx := workflow.WithActivityOptions(turnCtx, o)
	var refused Usage // what calls the budget stopped used before: the turn's too
	for {
		in.Budget = t.budgetCheck() // budget.go: nil without a budget
		var res activities.ModelTurnResult
		done := t.waiting(in.Call)
		err = workflow.ExecuteActivity(actx, activities.ModelTurnName, in).Get(turnCtx, &res)
		done()
		if err != nil {
			t.chargeFailed(err) // budget.go
			return nil, err
		}
		t.chargeBudget(res.Usage)
		if res.BudgetShort == nil {
			t.turn.unshown = 0 // the model was shown every committed input
			if t.rules.windowHint {
				s.WindowFrom = res.WindowFrom
			}
			res.Usage.InputTokens += refused.InputTokens
			res.Usage.OutputTokens += refused.OutputTokens
			res.Usage.CacheReadTokens += refused.CacheReadTokens
			res.Usage.CacheWriteTokens += refused.CacheWriteTokens
			return &res, nil
		}
		// The budget refused the call's request: what it used before is
		// counted (in the budget now, in usage with the call's result), and
		// the call is made again once a raise makes room.
		refused = refused.Add(Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, CacheReadTokens: res.Usage.CacheReadTokens, CacheWriteTokens: res.Usage.CacheWriteTokens})
		if !t.rules.trueReceipts {
			if err := t.awaitBudget(turnCtx, turnCtx, *res.BudgetShort, true); err != nil {
				return nil, err
			}
			continue
		}
		// The model was not shown this call's inputs: they wait
		// uncommitted (seed 000's read receipt) until the call is made.
		t.uncommit(info)
		if err := t.awaitBudget(turnCtx, turnCtx, *res.BudgetShort, true); err != nil {
			if turnCtx.Err() != nil || errors.Is(err, errBudgetClosed) {
				t.recommit(turnCtx, info, false) // a canceled turn commits its inputs (seed 000)
			}
			return nil, err
		}
		if len(s.Queue) > 0 {
			*turnFrom = s.length()
			t.recommit(turnCtx, info, true) // with whatever arrived meanwhile
		}
		if in.Entries, err = t.spill(turnCtx); err != nil {
			return nil, err
		}
		in.End, in.TurnFrom = s.length(), *turnFrom
	}
}

// uncommit hands the inputs committed for a call the model was not shown
// back to the front of the queue, without committed_at (rules.trueReceipts).
// Their instants are kept: the call already wrote them to the transcript,
// whose entries are written once, so they commit again at the same instant.
func (t *task) uncommit(info *TurnInfo) {
	s := t.durable
	n := t.turn.unshown
	if n == 0 {
		return
	}
	back := make([]contract.Message, 0, n+len(s.Queue))
	for _, h := range s.Held[len(s.Held)-n:] {
		m := h.Msg
		t.turn.withheld = append(t.turn.withheld, m.CommittedAt)
		m.CommittedAt = ""
		back = append(back, m)
	}
	s.Held = s.Held[:len(s.Held)-n]
	s.Queue = append(back, s.Queue...)
	t.turn.committed -= n
	t.turn.unshown = 0
	info.Inputs -= n
	s.recordTurn(*info)
}

// recommit commits the inputs uncommit handed back, at their instants, and
// with all, every other queued input at a fresh one.
func (t *task) recommit(ctx workflow.Context, info *TurnInfo, all bool) {
	s := t.durable
	w := t.turn.withheld
	t.turn.withheld = nil
	if len(w) > len(s.Queue) {
		w = w[:len(s.Queue)]
	}
	for i, at := range w {
		in := s.Queue[i]
		in.CommittedAt = at
		s.Held = append(s.Held, heldEntry{Msg: in})
	}
	s.Queue = s.Queue[len(w):]
	t.turn.committed += len(w)
	t.turn.unshown += len(w)
	info.Inputs += len(w)
	if all && len(s.Queue) > 0 {
		info.Inputs += t.commitQueue(s.nextInstant(workflow.Now(ctx)))
	}
	if len(s.Queue) == 0 {
		s.Queue = nil
	}
	s.recordTurn(*info)
}

// answerAtOnce answers call i without running a capability when it can: a
// built-in, a capability not offered, arguments that do not fit. A call
// that needs approval gets its approval recorded (no result yet, false).
func (t *task) answerAtOnce(ctx workflow.Context, p *pausedTurn, i int, call activities.ToolCall) (*activities.ScratchMessage, bool) {
	if i >= MaxCallsPerResponse && t.rules.callsPerResponse {
		return &activities.ScratchMessage{ToolCallID: call.ID, Content: fmt.Sprintf(
			"error: this response made %d tool calls; at most %d of one response run, and this one (number %d) did not: call it again in your next response if you still need it", len(p.Calls), MaxCallsPerResponse, i+1)}, true
	}
	if t.args.Output != nil {
		if content, ok := t.builtin(call); ok {
			return &activities.ScratchMessage{ToolCallID: call.ID, Content: content}, true
		}
	}
	if p.Offered != nil && !offered(p.Offered, call.Name) { // nil: a result recorded before the list existed
		return &activities.ScratchMessage{ToolCallID: call.ID, Content: fmt.Sprintf("error: the capability %q is not available now", call.Name)}, true
	}
	c := t.capability(call.Name)
	if c == nil {
		return nil, false // runCall answers it
	}
	if msg := t.checkCallArguments(c, call.Arguments); msg != "" {
		return &activities.ScratchMessage{ToolCallID: call.ID, Content: msg}, true
	}
	if t.needsApproval(c, call.Arguments) || t.mcpNeedsApproval(c, call.Name) {
		p.Approvals[i] = t.requestApproval(ctx, p.Turn, p.Numbered+i+1, c, call)
	}
	return nil, false
}

// runCall runs call i of the response and keeps its result.
func (t *task) runCall(turnCtx workflow.Context, p *pausedTurn, i int) error {
	r := t.runCapability(turnCtx, p.Turn, (p.Round-1)*100+i, p.Calls[i])
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
// too large in separate calls first, so no payload grows past the bound.
func (t *task) spill(ctx workflow.Context) (activities.Entries, error) {
	entries := t.durable.pendingEntries()
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
		if t.rules.namedTimers {
			o.Summary = fmt.Sprintf("write %d entries to the transcript", len(chunk.Write)+len(chunk.Stamps))
		}
		wctx := workflow.WithActivityOptions(ctx, o)
		in := activities.WriteEntriesInput{Transcript: t.durable.Transcript, Entries: chunk}
		if err := workflow.ExecuteActivity(wctx, activities.WriteEntriesName, in).Get(ctx, nil); err != nil {
			return entries, err
		}
	}
}

// commitOutput places the answer in the conversation at a fresh instant,
// strictly after the inputs it answers.
func (t *task) commitOutput(ctx workflow.Context, turn int, info *TurnInfo, res activities.ModelTurnResult) {
	s := t.durable
	// Everything before the output's position is now final in the transcript.
	s.Durable = s.length()
	out := res.Output
	out.ReceivedAt = ""
	out.CommittedAt = s.nextInstant(workflow.Now(ctx))
	s.LastOutputPos = s.length()
	s.Held = append(s.Held, heldEntry{Msg: contract.Message{Type: contract.TypeOutput, TaskIO: out}, Turn: turn})
	t.collectOutput(out, res.ValueRefs)
	s.Outputs++
	u := Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, CacheReadTokens: res.Usage.CacheReadTokens, CacheWriteTokens: res.Usage.CacheWriteTokens}
	s.Usage = s.Usage.Add(u) // (rounds with capability calls were added as they ran)
	info.StopReason, info.Model, info.Usage = res.StopReason, res.Model, u
	s.recordTurn(*info)
}

// passThroughTypes keep their type when an activity fails with them.
var passThroughTypes = map[string]bool{
	contract.ErrInvalidInput: true, contract.ErrModel: true, contract.ErrInternal: true,
	guard.ErrGuardrail: true, "FILE_NOT_FOUND": true, "FILE_CHANGED": true,
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
