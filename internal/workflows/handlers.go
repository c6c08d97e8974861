package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
)

// registerHandlers installs the queries and the `send` update. Signals are
// read from channels by receiveSignals.
func (t *task) registerHandlers(ctx workflow.Context) error {
	t.registerStartQuery(ctx)                           // query_start.go
	if err := t.registerContextQuery(ctx); err != nil { // turn_context.go
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryStatus, t.status); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryMessages, func(page *MessagesPage) ([]contract.Message, error) {
		if t.restoring() { // clients retry MESSAGES_LOADING
			return nil, &contract.Error{Type: ErrMessagesLoading, Message: "earlier messages are being loaded from storage (the task is reading its state back after continuing as new); retry the query in a moment"}
		}
		return t.messages(page)
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryCollected, func() ([]Collected, error) {
		if t.restoring() {
			return nil, errRestoring
		}
		records, _ := t.records()
		return records, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryDescribe, func() (Describe, error) {
		if t.restoring() {
			return Describe{}, errRestoring
		}
		return Describe{Agent: t.args.Agent.Name, Model: t.args.Agent.Model, Mode: t.args.Mode,
			OutputRequested: t.args.Output != nil, OutputConfigured: t.durable.OutputModel != "", OutputModel: t.durable.OutputModel,
			TranscriptTaskID: t.durable.Transcript.TaskID, TranscriptFirstRunID: t.durable.Transcript.FirstRunID, Transcript: t.durable.Transcript, Durable: t.durable.Durable}, nil
	}); err != nil {
		return err
	}
	// Validators read the state and write none: they do not run on replay,
	// so whatever a handler branches on must be decided by the handler.
	// While the run reads its state back there is nothing to check against:
	// the validator accepts, and the handler checks once the state is read
	// (afterRestore), deciding the same way on replay.
	validateSend := func(ctx workflow.Context, raw converter.RawValue) error {
		if err := t.updateRoom(); err != nil { // arrival.go
			t.countRejected(ctx, err)
			return appError(err)
		}
		if err := refuseUnknownPartKeys(raw); err != nil { // needs no state; here only, so replay never meets it
			t.countRejected(ctx, err)
			return appError(err)
		}
		if t.restoring() {
			return nil
		}
		return t.validateInput(ctx, raw)
	}
	sendOpts := workflow.UpdateHandlerOptions{Validator: validateSend}
	askOpts := workflow.UpdateHandlerOptions{
		Validator: func(ctx workflow.Context, raw converter.RawValue) error {
			if err := t.askRoom(); err != nil {
				t.countRejected(ctx, err)
				return appError(err)
			}
			return validateSend(ctx, raw)
		},
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateSend, t.send, sendOpts); err != nil {
		return err
	}
	if err := t.registerApprovals(ctx); err != nil {
		return err
	}
	if err := t.registerBudget(ctx); err != nil { // budget.go
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateAsk, t.ask, askOpts)
}

// refuseUnknownPartKeys refuses an input whose content parts carry keys
// a part does not have, such as "bytes" (contract.CheckPartKeys), which
// decoding would drop unseen. Only the send and ask validators run it:
// validators do not run on replay, so an input a recorded history accepted
// with such a key replays as it ran. (Start inputs and the input signal,
// checked again on replay, refuse them under rules.strictPartKeys.)
func refuseUnknownPartKeys(raw converter.RawValue) error {
	in, err := DecodeInput(raw)
	if err != nil {
		return nil // validateInput refuses it, with the decoding error
	}
	return contract.CheckPartKeys(in)
}

// validateInput is every check of the send and ask updates' validator.
func (t *task) validateInput(ctx workflow.Context, raw converter.RawValue) error {
	in, id, err := t.decodeInput(raw)
	if err == nil && t.rules.inputIDs {
		id = sendInputID(ctx, id)
		if _, dup := t.seen(id); dup {
			return nil // a retry: the handler answers with the first receipt
		}
	}
	if err == nil {
		_, err = t.checkInput(in)
	}
	if err != nil {
		t.countRejected(ctx, err)
		return appError(err) // the caller gets the type and the corrective message
	}
	return nil
}

// afterRestore: an update accepted while the run reads its state back was
// accepted unchecked (the validator had no state to check against), so its
// handler checks it once the state is read. The handler decides this from
// the state at its start, which replay reproduces (a validator's note
// would not be: validators do not run on replay).
func (t *task) afterRestore(ctx workflow.Context, raw converter.RawValue) error {
	if !t.restoring() {
		return nil
	}
	if err := workflow.Await(ctx, func() bool { return !t.restoring() }); err != nil {
		return err
	}
	return t.validateInput(ctx, raw)
}

// send queues a validated input and replies with its received_at.
func (t *task) send(ctx workflow.Context, raw converter.RawValue) (SendResult, error) {
	t.arrivals.updates++
	defer func() { t.arrivals.updates-- }()
	if err := t.afterRestore(ctx, raw); err != nil {
		return SendResult{}, err
	}
	in, id, err := t.decodeInput(raw)
	if err != nil {
		return SendResult{}, appError(err)
	}
	if !t.rules.sendCheckedOnce {
		// gen1 checked again here; newer rules check only in the validator,
		// so a task replays with the acceptance it was recorded with.
		if in, err = t.checkInput(in); err != nil {
			return SendResult{}, appError(err)
		}
	} else {
		if t.rules.inputIDs {
			id = sendInputID(ctx, id)
			if at, dup := t.seen(id); dup {
				return t.duplicate(ctx, id, at)
			}
		}
		in = t.normalize(in)
	}
	m := t.received(ctx, in)
	t.remember(id, m.ReceivedAt)
	var p *pendingInput
	if id != "" && t.needsArrivalActivity(in) {
		p = &pendingInput{}
		t.arrivals.pending[id] = p
	}
	m, err = t.arrive(ctx, m)
	if p != nil {
		p.done, p.err = true, err
		delete(t.arrivals.pending, id)
	}
	if err != nil {
		t.forget(id)
		t.countRejected(ctx, err)
		return SendResult{}, appError(err)
	}
	t.showDetails(ctx)
	return SendResult{ReceivedAt: m.ReceivedAt}, nil
}

// duplicate answers a repeated input ID with the first receipt, once the
// first input is queued (or with its refusal).
func (t *task) duplicate(ctx workflow.Context, id, at string) (SendResult, error) {
	t.logger.Info("duplicate input ID: acknowledged with the first receipt", "input_id", id)
	if p := t.arrivals.pending[id]; p != nil {
		if err := workflow.Await(ctx, func() bool { return p.done }); err != nil {
			return SendResult{}, err
		}
		if p.err != nil {
			return SendResult{}, appError(p.err)
		}
	}
	return SendResult{ReceivedAt: at}, nil
}

// receiveSignals takes delivery of signals for the life of the run. It is
// the only reader of the signal channels: a selector holds a value it has
// been handed until its coroutine runs, so a second reader (say, a drain
// before continue-as-new in another coroutine) could miss it. The drain
// therefore runs here, when the main loop asks through drainReq.
func (t *task) receiveSignals(ctx workflow.Context) {
	inputs := workflow.GetSignalChannel(ctx, SignalInput)
	closes := workflow.GetSignalChannel(ctx, SignalClose)
	cancels := workflow.GetSignalChannel(ctx, SignalCancelTurn)
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(inputs, func(c workflow.ReceiveChannel, _ bool) {
		var raw converter.RawValue
		c.Receive(ctx, &raw)
		t.onInputSignal(ctx, raw)
	})
	sel.AddReceive(closes, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		t.onClose()
	})
	sel.AddReceive(cancels, func(c workflow.ReceiveChannel, _ bool) {
		var raw converter.RawValue
		c.Receive(ctx, &raw)
		t.onCancelTurn(t.cancelTurnFor(raw))
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, SignalRetrying), func(c workflow.ReceiveChannel, _ bool) {
		var raw converter.RawValue
		c.Receive(ctx, &raw)
		t.onRetrying(ctx, raw)
	})
	sel.AddReceive(t.continuing.drainReq, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		t.drainSignals(ctx)
		t.continuing.drained = true
	})
	for ctx.Err() == nil {
		sel.Select(ctx)
	}
}

// drainSignals receives what is still in the channels without blocking.
func (t *task) drainSignals(ctx workflow.Context) {
	for {
		var raw converter.RawValue
		if !workflow.GetSignalChannel(ctx, SignalInput).ReceiveAsync(&raw) {
			break
		}
		t.onInputSignal(ctx, raw)
	}
	for workflow.GetSignalChannel(ctx, SignalClose).ReceiveAsync(nil) {
		t.onClose()
	}
	for workflow.GetSignalChannel(ctx, SignalCancelTurn).ReceiveAsync(nil) {
		// between turns there is nothing to cancel
	}
	for workflow.GetSignalChannel(ctx, SignalRetrying).ReceiveAsync(nil) {
		// between turns no call is waiting
	}
}

func (t *task) onInputSignal(ctx workflow.Context, raw converter.RawValue) {
	in, id, err := t.decodeInput(raw)
	if err == nil && t.rules.strictPartKeys {
		err = contract.CheckPartKeys(in)
	}
	if err == nil {
		if _, dup := t.seen(id); dup {
			t.logger.Info("duplicate input ID: the signal creates no second input", "input_id", id)
			return
		}
		in, err = t.checkInput(in)
	}
	if err != nil {
		// A signal has no reply: the refusal is recorded, nothing else changes.
		t.durable.Rejected++
		r := &Rejection{Type: contract.TypeOf(err), Message: err.Error(), At: contract.FormatTime(workflow.Now(ctx))}
		if se, ok := err.(*contract.Error); ok {
			r.Message = se.Message
		}
		if r.Type == "" {
			r.Type = contract.ErrInvalidInput
		}
		t.durable.LastRejection = r
		t.countRejected(ctx, err)
		t.logger.Warn("input signal refused", "type", r.Type, "reason", r.Message)
		return
	}
	m := t.received(ctx, in)
	t.remember(id, m.ReceivedAt)
	if !t.needsArrivalActivity(in) {
		_, _ = t.arrive(ctx, m) // queues at once
		return
	}
	// The check takes an activity: run it beside the signal reader.
	t.arrivals.checking++ // counted before the coroutine starts, so nothing closes in between
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { t.arrivals.checking-- }()
		if _, err := t.arrive(ctx, m); err != nil {
			t.forget(id)
			t.reject(ctx, err)
		}
	})
}

// reject records an input refused after its signal was taken in.
func (t *task) reject(ctx workflow.Context, err error) {
	t.durable.Rejected++
	r := &Rejection{Type: contract.TypeOf(err), Message: contract.MessageOf(err), At: contract.FormatTime(workflow.Now(ctx))}
	if r.Type == "" {
		r.Type = contract.ErrInvalidInput
	}
	t.durable.LastRejection = r
	t.countRejected(ctx, err)
	t.logger.Warn("input refused on arrival", "type", r.Type, "reason", r.Message)
}

func (t *task) onClose() {
	if !t.durable.Closing {
		t.logger.Info("close requested", "queued", len(t.durable.Queue))
	}
	t.durable.Closing = true
}

// onCancelTurn stops the running turn; with no turn running, or when the
// signal names another turn (a late one, for a turn already answered), it
// does nothing.
func (t *task) onCancelTurn(turn int) {
	if !t.turn.running || t.turn.cancel == nil {
		return
	}
	if turn != 0 && turn != t.durable.Turns {
		t.logger.Info("cancel-turn for another turn: ignored", "turn", t.durable.Turns, "named", turn)
		return
	}
	t.logger.Info("cancel-turn requested", "turn", t.durable.Turns)
	t.turn.cancel()
}

// status answers the `status` query from the task's state.
func (t *task) status() (Status, error) {
	if t.restoring() {
		return Status{State: StateWorking}, nil // the counters come with the state, in a moment
	}
	st := Status{
		State: t.life.state, Turns: t.durable.Turns, Queued: len(t.durable.Queue), Usage: t.durable.Usage, Error: t.life.err,
		Mode: t.args.Mode, Outputs: t.durable.Outputs, Messages: t.durable.length() + len(t.uncommitted()),
		Closing: t.durable.Closing, Rejected: t.durable.Rejected, LastRejection: t.durable.LastRejection,
		Run: t.durable.Run, EndedBy: t.life.endedBy, Retrying: t.retrying(), Approvals: t.pendingApprovals(),
		Budget: t.budgetStatus(),
	}
	if t.rules.workingWhileChecking && st.State == StateWaiting && (t.arrivals.checking > 0 || t.outages.calls[callCarry]) {
		st.State = StateWorking // an input's arrival check runs, or a continuation copies its files
	}
	if n := len(t.durable.RecentTurns); n > 0 {
		last := t.durable.RecentTurns[n-1]
		st.LastTurn = &last
		st.RecentTurns = append([]TurnInfo(nil), t.durable.RecentTurns...)
	}
	return st, nil
}

// showDetails sets the text the Web UI shows for the task. It writes no
// history events, so it can change every turn.
func (t *task) showDetails(ctx workflow.Context) {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** · agent `%s` · model `%s`\n\n", t.life.state, t.args.Agent.Name, t.args.Agent.Model)
	fmt.Fprintf(&b, "turns %d · outputs %d · queued %d · messages %d · run %d\n\n", t.durable.Turns, t.durable.Outputs, len(t.durable.Queue), t.durable.length(), t.durable.Run)
	fmt.Fprintf(&b, "tokens in %d · out %d", t.durable.Usage.InputTokens, t.durable.Usage.OutputTokens)
	if st := t.budgetStatus(); st != nil {
		fmt.Fprintf(&b, "\n\nbudget left: %s · used %s", amountsText(st.Left), spendText(st.Used))
		if st.Needed != nil {
			fmt.Fprintf(&b, " · the next call needs %s (raise-budget)", spendText(*st.Needed))
		}
	}
	if r := t.retrying(); r != nil {
		fmt.Fprintf(&b, "\n\nretrying %s: %s · attempts %d · since %s · next at %s", r.Type, r.Message, r.Attempts, r.Since, r.NextAt)
	}
	if t.life.err != nil {
		fmt.Fprintf(&b, "\n\nerror %s: %s", t.life.err.Type, t.life.err.Message)
	}
	b.WriteString(t.approvalLines())
	b.WriteString(t.lastEntryLines())
	workflow.SetCurrentDetails(ctx, b.String())
	t.trackAgentState(ctx)
}

func workflowLogger(t *task, turn int) log.Logger {
	return log.With(t.logger, "turn", turn)
}
