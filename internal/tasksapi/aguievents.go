package tasksapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
)

// aguiEvent is one AG-UI event (its JSON object).
type aguiEvent map[string]any

// aguiRelay translates a run's events (the full vocabulary, as stored)
// into one AG-UI run's events; docs/ag-ui.md has the table. Only the
// run's own events are translated: a sub-task's show as its delegate
// call's result.
type aguiRelay struct {
	s                   *server
	out                 *eventStream
	runID, model        string
	threadID, aguiRunID string
	text                string   // the messageId of the text message open, "" when none
	textAnswer          aguiKey  // the answer the open text is of
	calls               []string // tool calls shown of the open answer: an interruption withdraws them
	// waiting: approvals and frontend tool calls the run waited for before
	// this AG-UI run and still does (aguiAnswers); answeredCalls: the
	// frontend tool calls this AG-UI run answered, whose results the client
	// holds already.
	waiting       []contract.Approval
	answeredCalls map[string]bool
}

// aguiKey names an answer: a turn's model call attempt's.
type aguiKey struct{ turn, step, attempt, answer int }

func keyOf(e broker.Event) aguiKey { return aguiKey{e.Turn, e.Step, e.Attempt, e.AnswerNumber()} }

// send writes e; false once the client went away.
func (r *aguiRelay) send(e aguiEvent) bool { return r.out.aguiSend(e) == nil }

// closeOpen ends the text message open, if one is.
func (r *aguiRelay) closeOpen() bool {
	if r.text == "" {
		return true
	}
	id := r.text
	r.text = ""
	return r.send(aguiEvent{"type": "TEXT_MESSAGE_END", "messageId": id})
}

// relay translates one event; false once the AG-UI run has ended.
func (r *aguiRelay) relay(ctx context.Context, e broker.Event) bool {
	if e.Path != "" {
		return true // a sub-task's: its answer arrives as the delegate call's result
	}
	switch {
	case e.Interrupted():
		return r.withdraw(e)
	case e.Type == broker.TypeText && !e.Wrapped:
		return r.textDelta(e)
	case e.Type == broker.TypeToolCallStarted && e.Tool != nil:
		return r.toolCall(e)
	case e.Type == broker.TypeToolCallFinished && e.Tool != nil && r.answeredCalls[e.Tool.ID]:
		return true // the client's own tool message
	case e.Type == broker.TypeToolCallFinished && e.Tool != nil:
		return r.closeOpen() && r.send(aguiEvent{"type": "TOOL_CALL_RESULT", "messageId": r.runID + "-result-" + e.Tool.ID,
			"toolCallId": e.Tool.ID, "content": e.Tool.Result, "role": "tool"})
	case e.Type == broker.TypeApprovalRequested:
		return r.pause(ctx)
	case e.Type == broker.TypeDone:
		return r.finish(ctx, e)
	case e.Type == broker.TypeError:
		r.closeOpen()
		p := problemOfType(e.Code, e.Message)
		r.send(aguiEvent{"type": "RUN_ERROR", "message": p.Detail, "code": p.Code})
		return false
	}
	return true
}

// textDelta streams a piece of an answer's text: a new answer opens a
// new text message.
func (r *aguiRelay) textDelta(e broker.Event) bool {
	if r.text == "" || r.textAnswer != keyOf(e) {
		if !r.closeOpen() {
			return false
		}
		r.text = fmt.Sprintf("%s-t%d-s%d-a%d-n%d", r.runID, e.Turn, e.Step, e.Attempt, e.AnswerNumber())
		r.textAnswer, r.calls = keyOf(e), nil
		if !r.send(aguiEvent{"type": "TEXT_MESSAGE_START", "messageId": r.text, "role": "assistant"}) {
			return false
		}
	}
	return r.send(aguiEvent{"type": "TEXT_MESSAGE_CONTENT", "messageId": r.text, "delta": e.Text})
}

// toolCall shows a tool call the model asked for: its start, its
// arguments whole, its end.
func (r *aguiRelay) toolCall(e broker.Event) bool {
	parent := ""
	if r.text != "" && r.textAnswer == keyOf(e) {
		parent = r.text
	}
	if !r.closeOpen() {
		return false
	}
	start := aguiEvent{"type": "TOOL_CALL_START", "toolCallId": e.Tool.ID, "toolCallName": e.Tool.Name}
	if parent != "" {
		start["parentMessageId"] = parent
	}
	args := string(e.Tool.Arguments)
	if args == "" {
		args = "{}"
	}
	r.textAnswer = keyOf(e)
	r.calls = append(r.calls, e.Tool.ID)
	return r.send(start) &&
		r.send(aguiEvent{"type": "TOOL_CALL_ARGS", "toolCallId": e.Tool.ID, "delta": args}) &&
		r.send(aguiEvent{"type": "TOOL_CALL_END", "toolCallId": e.Tool.ID})
}

// withdraw ends an answer cut short: AG-UI has no retraction, so its text
// message is ended and a CUSTOM event names what to drop (the text message
// and the tool calls it showed); the next answer comes as a new message.
func (r *aguiRelay) withdraw(e broker.Event) bool {
	step, attempt := e.Cut()
	cut := aguiKey{e.Turn, step, attempt, e.AnswerNumber()}
	if r.textAnswer != cut {
		return true // nothing of it was shown here
	}
	value := map[string]any{"reason": e.Message}
	if r.text != "" {
		value["messageId"] = r.text
	}
	if len(r.calls) > 0 {
		value["toolCallIds"] = r.calls
	}
	r.calls = nil
	return r.closeOpen() && r.send(aguiEvent{"type": "CUSTOM", "name": "agenttask.retracted", "value": value})
}

// pause ends the AG-UI run where the run waits: for approvals, or for
// the client's frontend tools (endWaiting).
func (r *aguiRelay) pause(ctx context.Context) bool {
	if !r.closeOpen() {
		return false
	}
	list, err := r.s.starter().Approvals(ctx, r.runID)
	if err != nil {
		r.send(aguiEvent{"type": "RUN_ERROR", "message": "reading the run's approvals: " + err.Error(), "code": CodeInternal})
		return false
	}
	var pending []contract.Approval
	for _, a := range list {
		if a.Decision == nil {
			pending = append(pending, a)
		}
	}
	if len(pending) == 0 {
		return true // decided meanwhile: the run goes on
	}
	r.endWaiting(pending)
	return false
}

// endWaiting ends the AG-UI run at pending: every approval is an
// interrupt, which the next AG-UI run answers with resume; without one,
// the run ends with success naming the frontend tool calls it waits for
// (pendingToolCallIds), which the next AG-UI run answers with tool
// messages. An AG-UI run ends one way only, so frontend tool calls
// pending beside approvals are named once the approvals are answered.
func (r *aguiRelay) endWaiting(pending []contract.Approval) {
	var interrupts []aguiEvent
	var calls []string
	for _, a := range pending {
		if a.Client {
			calls = append(calls, a.CallID)
			continue
		}
		interrupts = append(interrupts, aguiEvent{"id": a.ID, "reason": "tool_approval",
			"message":        fmt.Sprintf("%s wants to run with %s: approve or deny", a.Capability, string(a.Arguments)),
			"responseSchema": approvalResponseSchema,
			"metadata":       map[string]any{"capability": a.Capability, "arguments": a.Arguments, "requestedAt": a.RequestedAt}})
	}
	outcome := aguiEvent{"type": "interrupt", "interrupts": interrupts}
	if len(interrupts) == 0 {
		outcome = aguiEvent{"type": "success", "pendingToolCallIds": calls}
	}
	r.send(aguiEvent{"type": "RUN_FINISHED", "threadId": r.threadID, "runId": r.aguiRunID, "outcome": outcome})
}

// approvalResponseSchema is what a resume entry's payload may carry.
var approvalResponseSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean"},"reason":{"type":"string"}}}`)

// finish ends the AG-UI run at its turn's done: the task's collected
// values as the state, then RUN_FINISHED with the answer and its usage.
func (r *aguiRelay) finish(ctx context.Context, e broker.Event) bool {
	if !r.closeOpen() {
		return false
	}
	var collected []contract.Collected
	if err := r.s.query(ctx, r.runID, &collected, contract.QueryCollected); err == nil && len(collected) > 0 {
		state := map[string]json.RawMessage{}
		for _, c := range collected {
			state[c.Name] = c.Value
		}
		if !r.send(aguiEvent{"type": "STATE_SNAPSHOT", "snapshot": map[string]any{"collected": state}}) {
			return false
		}
	}
	var u contract.Usage
	if e.Usage != nil {
		u = *e.Usage
	}
	usage := r.s.runUsage(r.model, u)
	fin := aguiEvent{"type": "RUN_FINISHED", "threadId": r.threadID, "runId": r.aguiRunID, "outcome": aguiEvent{"type": "success"},
		"usage": []aguiEvent{{"model": r.model, "inputTokens": usage.InputTokens, "outputTokens": usage.OutputTokens,
			"totalTokens": usage.InputTokens + usage.OutputTokens}}}
	if e.JSON != nil {
		fin["result"] = e.JSON
	}
	r.send(fin)
	return false
}
