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
	registerStartQuery(ctx, &t.opening, &t.args)                 // query_start.go
	if err := registerContextQuery(ctx, &t.shared); err != nil { // turn_context.go
		return err
	}
	if err := workflow.SetQueryHandler(ctx, contract.QueryStatus, t.status); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, contract.QueryMessages, func(page *contract.MessagesPage) ([]contract.Message, error) {
		if t.opening.restoring() { // clients retry MESSAGES_LOADING
			return nil, &contract.Error{Type: contract.ErrMessagesLoading, Message: "earlier messages are being loaded from storage (the task is reading its state back after continuing as new); retry the query in a moment"}
		}
		return messages(t.durable, uncommitted(t.durable.queuedInputs(), t.arrivals.listed(), t.rules.listArriving), t.reader, page)
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, contract.QueryCollected, func() ([]contract.Collected, error) {
		if t.opening.restoring() {
			return nil, errRestoring
		}
		records, _ := t.durable.records(t.secrets())
		return records, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, contract.QueryDescribe, func() (contract.Describe, error) {
		if t.opening.restoring() {
			return contract.Describe{}, errRestoring
		}
		return contract.Describe{Agent: t.args.Agent.Name, Model: t.args.Agent.Model, Mode: t.args.Mode,
			OutputRequested: t.args.Output != nil, OutputConfigured: t.durable.outputModel() != "", OutputModel: t.durable.outputModel(),
			TranscriptTaskID: t.durable.transcriptKey().TaskID, TranscriptFirstRunID: t.durable.transcriptKey().FirstRunID, Transcript: t.durable.transcriptKey(), Durable: t.durable.durableTo()}, nil
	}); err != nil {
		return err
	}
	// Validators read the state and write none: they do not run on replay,
	// so whatever a handler branches on must be decided by the handler.
	// While the run reads its state back there is nothing to check against:
	// the validator accepts, and the handler checks once the state is read
	// (afterRestore), deciding the same way on replay.
	validateSend := func(ctx workflow.Context, raw converter.RawValue) error {
		if err := t.arrivals.updateRoom(); err != nil { // arrival.go
			countRejected(ctx, err)
			return appError(err)
		}
		if err := refuseUnknownPartKeys(raw); err != nil { // needs no state; here only, so replay never meets it
			countRejected(ctx, err)
			return appError(err)
		}
		if t.opening.restoring() {
			return nil
		}
		return t.validateInput(ctx, raw)
	}
	sendOpts := workflow.UpdateHandlerOptions{Validator: validateSend}
	askOpts := workflow.UpdateHandlerOptions{
		Validator: func(ctx workflow.Context, raw converter.RawValue) error {
			if err := t.asks.room(); err != nil {
				countRejected(ctx, err)
				return appError(err)
			}
			return validateSend(ctx, raw)
		},
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateSend, t.send, sendOpts); err != nil {
		return err
	}
	if err := t.registerApprovals(ctx); err != nil {
		return err
	}
	if err := t.registerBudget(ctx); err != nil { // budget.go
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateAsk, t.ask, askOpts)
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

// validateInput is the send and ask updates' validator once the state is
// known: admit's decision, counted when it refuses.
func (t *task) validateInput(ctx workflow.Context, raw converter.RawValue) error {
	a, err := t.admit(ctx, raw, viaUpdate)
	if err == nil {
		err = a.refusal // a repeat is accepted: the handler answers with the first receipt
	}
	if err != nil {
		countRejected(ctx, err)
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
	if !t.opening.restoring() {
		return nil
	}
	if err := workflow.Await(ctx, func() bool { return !t.opening.restoring() }); err != nil {
		return err
	}
	return t.validateInput(ctx, raw)
}

// send queues a validated input and replies with its received_at.
func (t *task) send(ctx workflow.Context, raw converter.RawValue) (contract.SendResult, error) {
	defer t.arrivals.updateStarted()()
	if err := t.afterRestore(ctx, raw); err != nil {
		return contract.SendResult{}, err
	}
	a, err := t.admit(ctx, raw, viaUpdate)
	switch {
	case err != nil:
		return contract.SendResult{}, appError(err)
	case !t.rules.sendCheckedOnce && a.refusal != nil:
		// gen1 checked again here; newer rules decide in the validator
		// only, so a task replays with the acceptance it was recorded with.
		return contract.SendResult{}, appError(a.refusal)
	case a.repeat():
		// Answered with the first receipt, once the first input is queued
		// (or with its refusal).
		t.logger.Info("duplicate input ID: acknowledged with the first receipt", "input_id", a.id)
		if err := t.arrivals.outcome(ctx, a.id); err != nil {
			return contract.SendResult{}, err
		}
		return contract.SendResult{ReceivedAt: a.firstAt}, nil
	}
	m, err := t.takeUpdate(ctx, a)
	if err != nil {
		countRejected(ctx, err)
		return contract.SendResult{}, appError(err)
	}
	t.showDetails(ctx)
	return contract.SendResult{ReceivedAt: m.ReceivedAt}, nil
}

// receiveSignals takes delivery of signals for the life of the run. It is
// the only reader of the signal channels: a selector holds a value it has
// been handed until its coroutine runs, so a second reader (say, a drain
// before continue-as-new in another coroutine) could miss it. The drain
// therefore runs here, when the main loop asks through drainReq.
func (t *task) receiveSignals(ctx workflow.Context) {
	inputs := workflow.GetSignalChannel(ctx, contract.SignalInput)
	closes := workflow.GetSignalChannel(ctx, contract.SignalClose)
	cancels := workflow.GetSignalChannel(ctx, contract.SignalCancelTurn)
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(inputs, func(c workflow.ReceiveChannel, _ bool) {
		var raw converter.RawValue
		c.Receive(ctx, &raw)
		t.onInputSignal(ctx, raw)
	})
	sel.AddReceive(closes, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		closeRequested(t.durable, t.logger)
	})
	sel.AddReceive(cancels, func(c workflow.ReceiveChannel, _ bool) {
		var raw converter.RawValue
		c.Receive(ctx, &raw)
		t.turn.cancelFor(cancelTurnFor(raw, t.rules), t.durable.turns(), t.logger)
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, contract.SignalRetrying), func(c workflow.ReceiveChannel, _ bool) {
		var raw converter.RawValue
		c.Receive(ctx, &raw)
		if t.outages.onRetrying(raw) {
			t.showDetails(ctx)
		}
	})
	sel.AddReceive(t.continuing.drainRequests(), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		t.drainSignals(ctx)
		t.continuing.drainedNow()
	})
	for ctx.Err() == nil {
		sel.Select(ctx)
	}
}

// drainSignals receives what is still in the channels without blocking.
func (t *task) drainSignals(ctx workflow.Context) {
	for {
		var raw converter.RawValue
		if !workflow.GetSignalChannel(ctx, contract.SignalInput).ReceiveAsync(&raw) {
			break
		}
		t.onInputSignal(ctx, raw)
	}
	for workflow.GetSignalChannel(ctx, contract.SignalClose).ReceiveAsync(nil) {
		closeRequested(t.durable, t.logger)
	}
	for workflow.GetSignalChannel(ctx, contract.SignalCancelTurn).ReceiveAsync(nil) {
		// between turns there is nothing to cancel
	}
	for workflow.GetSignalChannel(ctx, contract.SignalRetrying).ReceiveAsync(nil) {
		// between turns no call is waiting
	}
}

// onInputSignal takes an input signal's input, or records its refusal.
func (t *task) onInputSignal(ctx workflow.Context, raw converter.RawValue) {
	a, err := t.admit(ctx, raw, viaSignal)
	if err == nil && a.repeat() {
		t.logger.Info("duplicate input ID: the signal creates no second input", "input_id", a.id)
		return
	}
	if err == nil {
		err = a.refusal
	}
	if err != nil {
		// A signal has no reply: the refusal is recorded, nothing else changes.
		msg := err.Error()
		if se, ok := err.(*contract.Error); ok {
			msg = se.Message
		}
		r := t.durable.refused(rejectionOf(err, msg, workflow.Now(ctx)))
		countRejected(ctx, err)
		t.logger.Warn("input signal refused", "type", r.Type, "reason", r.Message)
		return
	}
	t.takeSignal(ctx, a)
}

// closeRequested takes a close signal.
func closeRequested(c *Carry, logger log.Logger) {
	if c.close() {
		logger.Info("close requested", "queued", c.queued())
	}
}

// status answers the `status` query from the task's state.
func (t *task) status() (contract.Status, error) {
	if t.opening.restoring() {
		return contract.Status{State: contract.StateWorking}, nil // the counters come with the state, in a moment
	}
	rejected, lastRejection := t.durable.rejections()
	st := contract.Status{
		State: t.life.current(), Turns: t.durable.turns(), Queued: t.durable.queued(), Usage: t.durable.used(), Error: t.life.failure(),
		Mode: t.args.Mode, Outputs: t.durable.outputs(), Messages: t.durable.length() + len(uncommitted(t.durable.queuedInputs(), t.arrivals.listed(), t.rules.listArriving)),
		Closing: t.durable.closing(), Rejected: rejected, LastRejection: lastRejection,
		Run: t.durable.run(), EndedBy: t.life.endedHow(), Retrying: t.outages.retrying(), Approvals: t.durable.pendingApprovals() + len(t.tree.pending()),
		Budget: t.durable.budgetStatus(t.budget),
	}
	if t.rules.workingWhileChecking && st.State == contract.StateWaiting && (t.arrivals.busy() || t.outages.running(callCarry)) {
		st.State = contract.StateWorking // an input's arrival check runs, or a continuation copies its files
	}
	st.LastTurn, st.RecentTurns = t.durable.recentTurns()
	return st, nil
}

// showDetails sets the text the Web UI shows for the task. It writes no
// history events, so it can change every turn.
func (t *task) showDetails(ctx workflow.Context) {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** · agent `%s` · model `%s`\n\n", t.life.current(), t.args.Agent.Name, t.args.Agent.Model)
	fmt.Fprintf(&b, "turns %d · outputs %d · queued %d · messages %d · run %d\n\n", t.durable.turns(), t.durable.outputs(), t.durable.queued(), t.durable.length(), t.durable.run())
	fmt.Fprintf(&b, "tokens in %d · out %d", t.durable.used().InputTokens, t.durable.used().OutputTokens)
	if st := t.durable.budgetStatus(t.budget); st != nil {
		fmt.Fprintf(&b, "\n\nbudget left: %s · used %s", amountsText(st.Left), spendText(st.Used))
		if st.Needed != nil {
			fmt.Fprintf(&b, " · the next call needs %s (raise-budget)", spendText(*st.Needed))
		}
	}
	if r := t.outages.retrying(); r != nil {
		fmt.Fprintf(&b, "\n\nretrying %s: %s · attempts %d · since %s · next at %s", r.Type, r.Message, r.Attempts, r.Since, r.NextAt)
	}
	if t.life.failure() != nil {
		fmt.Fprintf(&b, "\n\nerror %s: %s", t.life.failure().Type, t.life.failure().Message)
	}
	b.WriteString(t.durable.approvalLines())
	b.WriteString(lastEntryLines(t.durable, t.secrets()))
	workflow.SetCurrentDetails(ctx, b.String())
	trackAgentState(ctx, &t.life, t.rules.agentStateAttribute && t.durable != nil, t.outages.retrying() != nil, t.logger)
}

func workflowLogger(t *task, turn int) log.Logger {
	return log.With(t.logger, "turn", turn)
}
