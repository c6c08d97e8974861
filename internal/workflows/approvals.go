package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/guard"
)

// Approvals (rules.approvals): a capability that says "approval": "always",
// or whose approvalCondition holds for a call, runs only once a person has
// approved the call (the decide update). Meanwhile the turn waits with no
// activity running and no timer but the approval timeout; the other calls
// of the same response run at once; inputs queue and commit at the next
// model call. A denied call is answered to the model with the reason.

const (
	maxDecidedKept       = 50    // decided approvals the approvals query still lists
	maxReasonBytes       = 2_000 // a decision's reason
	maxDeciderBytes      = 256   // a decision's by
	maxApprovalArgsShown = 200   // characters of arguments shown in the Web UI
)

// approvalRecord is an approval as the task keeps it.
type approvalRecord struct {
	Approval
	CallID string `json:"call_id"`
	// Deadline is when an approvalTimeout denies it ("" = never).
	Deadline string `json:"deadline,omitempty"`
}

// errPaused ends a turn's run early: it waits for approvals and the run
// continues as new; the next run resumes the turn from Carry.Paused.
var errPaused = errors.New("turn paused for continue-as-new while approvals are pending")

// pausedTurn is a turn waiting for approvals, as continue-as-new carries it.
type pausedTurn struct {
	Turn     int                         `json:"turn"`
	TurnFrom int                         `json:"turn_from"`
	Round    int                         `json:"round"`
	Info     TurnInfo                    `json:"info"`
	Usage    Usage                       `json:"usage"`
	Scratch  []activities.ScratchMessage `json:"scratch,omitempty"`
	// Calls are the response's calls; Results[i] is set once call i has
	// its result; Approvals[i] is its approval's ID ("" = none needed).
	Calls     []activities.ToolCall        `json:"calls"`
	Results   []*activities.ScratchMessage `json:"results"`
	Approvals []string                     `json:"approvals"`
	Offered   []string                     `json:"offered"`
	Numbered  int                          `json:"numbered"` // capability calls of the turn before this response
}

// needsApproval says whether a call must wait for a person. The built-ins
// never do; a condition that cannot be evaluated asks (fail safe).
func (t *task) needsApproval(c *contract.Capability, args string) bool {
	if !t.rules.approvals || c == nil {
		return false
	}
	if c.Approval == contract.ApprovalAlways {
		return true
	}
	if c.ApprovalCondition == "" {
		return false
	}
	vars, _ := t.variables()
	collected := map[string]json.RawMessage{}
	for _, v := range t.durable.Collected {
		collected[v.Name] = v.Value
	}
	need, err := guard.ApprovalNeeded(c.ApprovalCondition, json.RawMessage(args), vars, collected)
	if err != nil {
		t.logger.Warn("approval condition failed: asking", "capability", c.Name, "error", err)
		return true
	}
	return need
}

// mcpNeedsApproval: a call of an MCP tool its server marks destructive or
// open-world (or lists without annotations, which the MCP specification
// reads as both) waits for a person's decision, unless the capability's
// autoApprove names the tool or "*" (rules.mcpHints). A listing without
// hints (an older worker's) counts as unannotated.
func (t *task) mcpNeedsApproval(c *contract.Capability, function string) bool {
	if !t.rules.mcpHints || c == nil || c.Kind != contract.CapabilityMCP {
		return false
	}
	tool := t.mcpTool(function)
	if tool == nil {
		return false
	}
	for _, n := range c.AutoApprove {
		if n == "*" || n == tool.Tool {
			return false
		}
	}
	h := tool.Hints
	return h == nil || (!h.ReadOnly && h.Destructive) || h.OpenWorld
}

// requestApproval records a pending approval for call n of the turn.
func (t *task) requestApproval(ctx workflow.Context, turn, n int, c *contract.Capability, call activities.ToolCall) string {
	now := workflow.Now(ctx)
	args := json.RawMessage(call.Arguments)
	if !json.Valid(args) {
		args, _ = json.Marshal(call.Arguments)
	}
	r := approvalRecord{
		Approval: Approval{ID: fmt.Sprintf("t%d.c%d", turn, n), Capability: approvalName(c, call), Arguments: json.RawMessage(t.mask(string(args))),
			Turn: turn, RequestedAt: contract.FormatTime(now)},
		CallID: call.ID,
	}
	if d := c.ApprovalWait(); d > 0 {
		r.Deadline = contract.FormatTime(now.Add(d))
	}
	t.durable.Approvals = append(t.durable.Approvals, r)
	t.gaugeApprovals(ctx)
	t.logger.Info("approval requested", "approval", r.ID, "capability", c.Name)
	return r.ID
}

func (t *task) approval(id string) *approvalRecord {
	for i := range t.durable.Approvals {
		if t.durable.Approvals[i].ID == id {
			return &t.durable.Approvals[i]
		}
	}
	return nil
}

func (t *task) pendingApprovals() int {
	n := 0
	for _, a := range t.durable.Approvals {
		if a.Decision == nil {
			n++
		}
	}
	return n
}

// decideApproval records a decision and forgets the oldest decided ones.
func (t *task) decideApproval(ctx workflow.Context, a *approvalRecord, approve bool, reason, by string) Approval {
	a.Decision = &Decision{Approve: approve, Reason: reason, By: by, DecidedAt: contract.FormatTime(workflow.Now(ctx))}
	out := a.Approval
	t.logger.Info("approval decided", "approval", a.ID, "approve", approve, "reason", reason, "by", by)
	decided := 0
	for _, r := range t.durable.Approvals {
		if r.Decision != nil {
			decided++
		}
	}
	for i := 0; decided > maxDecidedKept && i < len(t.durable.Approvals); {
		if t.durable.Approvals[i].Decision != nil {
			t.durable.Approvals = append(t.durable.Approvals[:i], t.durable.Approvals[i+1:]...)
			decided--
			continue
		}
		i++
	}
	t.gaugeApprovals(ctx)
	return out
}

// denyPending denies every pending approval of the turn (all turns: 0).
func (t *task) denyPending(ctx workflow.Context, turn int, reason string) {
	for i := range t.durable.Approvals {
		if a := &t.durable.Approvals[i]; a.Decision == nil && (turn == 0 || a.Turn == turn) {
			t.decideApproval(ctx, t.approval(a.ID), false, reason, "")
		}
	}
}

// awaitApprovals waits until every approval of the response is decided.
// Close denies the pending ones (the turn then goes on, answering with what
// it has); cancel-turn denies them and cancels the turn. When the run is
// due to continue as new meanwhile it returns errPaused, the turn kept in
// Carry.Paused.
func (t *task) awaitApprovals(ctx, turnCtx workflow.Context, p *pausedTurn) error {
	waiting := func() bool {
		for _, id := range p.Approvals {
			if a := t.approval(id); id != "" && a != nil && a.Decision == nil {
				return true
			}
		}
		return false
	}
	if !waiting() {
		return nil
	}
	t.life.state = StateAwaitingApproval
	t.showDetails(ctx)
	defer func() {
		t.life.state = StateWorking
		t.showDetails(ctx)
	}()
	// One timer per approval that has a timeout; none otherwise.
	timersCtx, stopTimers := workflow.WithCancel(turnCtx)
	defer stopTimers()
	for _, id := range p.Approvals {
		a := t.approval(id)
		if id == "" || a == nil || a.Decision != nil || a.Deadline == "" {
			continue
		}
		deadline, _ := contract.ParseTime(a.Deadline)
		wait := deadline.Sub(workflow.Now(ctx))
		approvalID := id
		workflow.Go(timersCtx, func(tctx workflow.Context) {
			if wait > 0 {
				if err := t.newTimer(tctx, wait, "approval timeout "+shortDuration(a.timeout())+" · "+approvalID).Get(tctx, nil); err != nil {
					return // decided first, or the turn ended
				}
			}
			if a := t.approval(approvalID); a != nil && a.Decision == nil {
				t.decideApproval(ctx, a, false, ReasonApprovalTimedOut, "")
			}
		})
	}
	err := workflow.Await(turnCtx, func() bool {
		return !waiting() || t.durable.Closing || t.pauseDue(ctx)
	})
	switch {
	case err != nil:
		if ctx.Err() == nil {
			t.denyPending(ctx, p.Turn, ReasonTurnCanceled)
		}
		return err
	case waiting() && t.durable.Closing:
		t.denyPending(ctx, p.Turn, ReasonTaskClosed)
	case waiting():
		t.durable.Paused = p
		return errPaused
	}
	return nil
}

// pauseDue: the run should continue as new while a turn waits for people.
// Not while an input is being checked; waiting asks are answered
// ANSWER_PENDING (rules.pauseDespiteAsks; before, they held the run).
func (t *task) pauseDue(ctx workflow.Context) bool {
	if !t.rules.pauseAcrossRuns || t.arrivals.checking > 0 || t.durable.Closing {
		return false
	}
	if len(t.asks.waiting) > 0 && !t.rules.pauseDespiteAsks {
		return false // older rules: the asks held the run
	}
	return workflow.GetInfo(ctx).GetContinueAsNewSuggested() ||
		(t.args.ContinueAsNewEvents > 0 && historyLength(ctx) >= t.args.ContinueAsNewEvents)
}

// deniedResult is what the model reads for a call a person refused.
func deniedResult(a *approvalRecord) string {
	d := a.Decision
	switch d.Reason {
	case ReasonApprovalTimedOut:
		return fmt.Sprintf("error: this call of %q needed a person's approval, which did not come in time (%s); it did not run", a.Capability, d.Reason)
	case ReasonTaskClosed, ReasonTurnCanceled:
		return fmt.Sprintf("error: this call of %q needed a person's approval; it did not run (%s)", a.Capability, d.Reason)
	}
	msg := fmt.Sprintf("error: a person refused this call of %q; it did not run", a.Capability)
	if d.Reason != "" {
		msg += ". Their reason: " + d.Reason
	}
	return msg
}

// decodeDecide reads and checks the decide update's argument against the
// task's approvals.
func (t *task) decodeDecide(raw converter.RawValue) (DecideArgs, *approvalRecord, error) {
	var d DecideArgs
	data, err := payloadJSON(raw)
	if err == nil {
		err = json.Unmarshal(data, &d)
	}
	switch {
	case err != nil:
		return d, nil, contract.Invalid(`decide takes {"id": "t1.c1", "approve": true|false, "reason"?: string, "by"?: string}: %v`, err)
	case d.ID == "":
		return d, nil, contract.Invalid(`decide: "id" names the approval (the approvals query lists them)`)
	case d.Approve == nil:
		return d, nil, contract.Invalid(`decide: "approve" is required: true runs the call, false refuses it`)
	case len(d.Reason) > maxReasonBytes:
		return d, nil, contract.Invalid("decide: reason is %d bytes, at most %d", len(d.Reason), maxReasonBytes)
	case len(d.By) > maxDeciderBytes:
		return d, nil, contract.Invalid("decide: by is %d bytes, at most %d", len(d.By), maxDeciderBytes)
	}
	a := t.approval(d.ID)
	if a == nil {
		return d, nil, &contract.Error{Type: ErrApprovalNotFound, Message: fmt.Sprintf("the task has no approval %q; the approvals query lists them", d.ID)}
	}
	if a.Decision != nil {
		how := "denied"
		if a.Decision.Approve {
			how = "approved"
		}
		return d, nil, &contract.Error{Type: ErrApprovalDecided, Message: fmt.Sprintf("approval %q was %s at %s (%s); the first decision stands", d.ID, how, a.Decision.DecidedAt, a.Decision.Reason)}
	}
	return d, a, nil
}

// registerApprovals installs the decide update and the approvals query.
func (t *task) registerApprovals(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryApprovals, func() ([]Approval, error) {
		if t.restoring() { // clients retry MESSAGES_LOADING
			return nil, &contract.Error{Type: ErrMessagesLoading, Message: "the task is reading its state back after continuing as new; retry the query in a moment"}
		}
		out := make([]Approval, 0, len(t.durable.Approvals))
		for _, a := range t.durable.Approvals {
			out = append(out, a.Approval)
		}
		return out, nil
	}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateDecide, t.decide, workflow.UpdateHandlerOptions{
		Validator: func(ctx workflow.Context, raw converter.RawValue) error {
			if t.restoring() {
				return nil // checked by the handler once the state is read back
			}
			_, _, err := t.decodeDecide(raw)
			return appErrorOrNil(err)
		},
	})
}

// decide applies a decision; the turn waiting for it goes on.
func (t *task) decide(ctx workflow.Context, raw converter.RawValue) (Approval, error) {
	if t.restoring() {
		if err := workflow.Await(ctx, func() bool { return !t.restoring() }); err != nil {
			return Approval{}, err
		}
	}
	// Checked again: a timeout may have decided it since the validator ran.
	d, a, err := t.decodeDecide(raw)
	if err != nil {
		return Approval{}, appError(err)
	}
	return t.decideApproval(ctx, a, *d.Approve, strings.TrimSpace(d.Reason), d.By), nil
}

func appErrorOrNil(err error) error {
	if err == nil {
		return nil
	}
	return appError(err)
}

// approvalLines are the pending approvals as the Web UI shows them.
func (t *task) approvalLines() string {
	var b strings.Builder
	for _, a := range t.durable.Approvals {
		if a.Decision != nil {
			continue
		}
		fmt.Fprintf(&b, "\n\nawaiting approval **%s** · `%s` · %s", a.ID, a.Capability, truncate(string(a.Arguments), maxApprovalArgsShown))
		if a.Deadline != "" {
			fmt.Fprintf(&b, " · until %s", a.Deadline)
		}
	}
	return b.String()
}

// approvalName is what an approval names: the capability, or for an mcp
// capability the function called ("everything__echo"), which says which
// of its tools would run.
func approvalName(c *contract.Capability, call activities.ToolCall) string {
	if c.Kind == contract.CapabilityMCP {
		return call.Name
	}
	return c.Name
}
