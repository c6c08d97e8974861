package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
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
	contract.Approval // its call_id, once a field of this record, keeps its key
	// Result is a client capability's result, from the decide that
	// approved it, until its turn takes it (rules.clientTools).
	Result string `json:"result,omitempty"`
	// Deadline is when an approvalTimeout denies it ("" = never).
	Deadline string `json:"deadline,omitempty"`
	// Announced and DecisionAnnounced: its request and its decision were
	// streamed (rules.streamEvents; events.go).
	Announced         bool `json:"announced,omitempty"`
	DecisionAnnounced bool `json:"decision_announced,omitempty"`
}

// takeResult hands over a client capability's result once: the approval
// keeps no copy.
func (a *approvalRecord) takeResult() string {
	r := a.Result
	a.Result = ""
	return r
}

// errPaused ends a turn's run early: it waits for approvals and the run
// continues as new; the next run resumes the turn from Carry.Paused.
var errPaused = errors.New("turn paused for continue-as-new while approvals are pending")

// pausedTurn is a turn waiting for approvals, as continue-as-new carries it.
type pausedTurn struct {
	Turn     int `json:"turn"`
	TurnFrom int `json:"turn_from"`
	Round    int `json:"round"`
	// Step is the turn's last model call (rules.streamAll; 0 before): the
	// next call, in this run or the next, is step Step+1.
	Step    int                         `json:"step,omitempty"`
	Info    contract.TurnInfo           `json:"info"`
	Usage   contract.Usage              `json:"usage"`
	Scratch []activities.ScratchMessage `json:"scratch,omitempty"`
	// Calls are the response's calls; Results[i] is set once call i has
	// its result; Approvals[i] is its approval's ID ("" = none needed).
	Calls     []activities.ToolCall        `json:"calls"`
	Results   []*activities.ScratchMessage `json:"results"`
	Approvals []string                     `json:"approvals"`
	Offered   []string                     `json:"offered"`
	Numbered  int                          `json:"numbered"` // capability calls of the turn before this response
}

// needsApproval says whether a call must wait for a person (on:
// rules.approvals). The built-ins never do; a condition that cannot be
// evaluated asks (fail safe). A condition reads the variables (of start,
// the start argument) and what the task saved.
func needsApproval(on bool, c *contract.Capability, args string, saved *collectedRecord, start *StartArgs, logger log.Logger) bool {
	if !on || c == nil {
		return false
	}
	if c.Approval == contract.ApprovalAlways {
		return true
	}
	if c.ApprovalCondition == "" {
		return false
	}
	vars, _ := saved.variables(start)
	need, err := guard.ApprovalNeeded(c.ApprovalCondition, json.RawMessage(args), vars, saved.byName())
	if err != nil {
		logger.Warn("approval condition failed: asking", "capability", c.Name, "error", err)
		return true
	}
	return need
}

// requestApproval records a pending approval for call n of the turn.
func (t *task) requestApproval(ctx workflow.Context, turn, n int, c *contract.Capability, call activities.ToolCall) string {
	now := workflow.Now(ctx)
	args := json.RawMessage(call.Arguments)
	if !json.Valid(args) {
		args, _ = json.Marshal(call.Arguments)
	}
	r := approvalRecord{
		Approval: contract.Approval{ID: fmt.Sprintf("t%d.c%d", turn, n), Capability: approvalName(c, call), Arguments: json.RawMessage(t.secrets().mask(string(args))),
			Turn: turn, RequestedAt: contract.FormatTime(now), CallID: call.ID, Client: c.Kind == contract.CapabilityClient},
	}
	if d := c.ApprovalWait(); d > 0 {
		r.Deadline = contract.FormatTime(now.Add(d))
	}
	t.durable.Approvals = append(t.durable.Approvals, r)
	gaugeApprovals(ctx, t.life.id(), t.durable.pendingApprovals())
	t.logger.Info("approval requested", "approval", r.ID, "capability", c.Name)
	return r.ID
}

// approval is the approval with this ID, or nil.
func (r *approvalsRecord) approval(id string) *approvalRecord {
	for i := range r.Approvals {
		if r.Approvals[i].ID == id {
			return &r.Approvals[i]
		}
	}
	return nil
}

// announce marks the approvals among ids whose request (decided: whose
// decision) was not streamed yet as streamed, and returns them.
func (r *approvalsRecord) announce(ids []string, decided bool) []contract.Approval {
	var out []contract.Approval
	for _, id := range ids {
		a := r.approval(id)
		switch {
		case id == "" || a == nil:
		case !decided && !a.Announced:
			a.Announced = true
			out = append(out, a.Approval)
		case decided && a.Decision != nil && !a.DecisionAnnounced:
			a.DecisionAnnounced = true
			out = append(out, a.Approval)
		}
	}
	return out
}

// toAnnounce says whether an approval among ids was decided and its
// decision not streamed yet.
func (r *approvalsRecord) toAnnounce(ids []string) bool {
	for _, id := range ids {
		if a := r.approval(id); id != "" && a != nil && a.Decision != nil && !a.DecisionAnnounced {
			return true
		}
	}
	return false
}

// pendingList are the approvals not decided yet.
func (r *approvalsRecord) pendingList() []contract.Approval {
	var out []contract.Approval
	for _, a := range r.Approvals {
		if a.Decision == nil {
			out = append(out, a.Approval)
		}
	}
	return out
}

// pendingApprovals counts the approvals not decided yet.
func (r *approvalsRecord) pendingApprovals() int {
	n := 0
	for _, a := range r.Approvals {
		if a.Decision == nil {
			n++
		}
	}
	return n
}

// decide records a decision and forgets the oldest decided ones.
// The gauge of pending approvals is set for taskID.
func (r *approvalsRecord) decide(ctx workflow.Context, a *approvalRecord, d contract.Decision, taskID string, logger log.Logger) contract.Approval {
	d.DecidedAt = contract.FormatTime(workflow.Now(ctx))
	a.Decision = &d
	if !d.Approve {
		a.Result = ""
	}
	out := a.Approval
	logger.Info("approval decided", "approval", a.ID, "approve", d.Approve, "reason", d.Reason, "by", d.By)
	decided := 0
	for _, x := range r.Approvals {
		if x.Decision != nil {
			decided++
		}
	}
	for i := 0; decided > maxDecidedKept && i < len(r.Approvals); {
		if r.Approvals[i].Decision != nil {
			r.Approvals = append(r.Approvals[:i], r.Approvals[i+1:]...)
			decided--
			continue
		}
		i++
	}
	gaugeApprovals(ctx, taskID, r.pendingApprovals())
	return out
}

// denyPending denies every pending approval of the turn (all turns: 0).
func (r *approvalsRecord) denyPending(ctx workflow.Context, turn int, reason, taskID string, logger log.Logger) {
	for i := range r.Approvals {
		if a := &r.Approvals[i]; a.Decision == nil && (turn == 0 || a.Turn == turn) {
			r.decide(ctx, r.approval(a.ID), contract.Decision{Approve: false, Reason: reason}, taskID, logger)
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
			if a := t.durable.approval(id); id != "" && a != nil && a.Decision == nil {
				return true
			}
		}
		return false
	}
	if !waiting() {
		return nil
	}
	t.life.enter(contract.StateAwaitingApproval)
	t.showDetails(ctx)
	t.announceRequests(ctx, p) // events.go
	defer func() {
		t.announceDecisions(ctx, p) // those the wait's end decided (a close, a cancel)
		t.life.enter(contract.StateWorking)
		t.showDetails(ctx)
	}()
	// One timer per approval that has a timeout; none otherwise.
	timersCtx, stopTimers := workflow.WithCancel(turnCtx)
	defer stopTimers()
	t.announceDecisionsWhileWaiting(timersCtx, p)
	for _, id := range p.Approvals {
		a := t.durable.approval(id)
		if id == "" || a == nil || a.Decision != nil || a.Deadline == "" {
			continue
		}
		deadline, _ := contract.ParseTime(a.Deadline)
		wait := deadline.Sub(workflow.Now(ctx))
		approvalID := id
		workflow.Go(timersCtx, func(tctx workflow.Context) {
			if wait > 0 {
				if err := t.rules.newTimer(tctx, wait, "approval timeout "+shortDuration(a.timeout())+" · "+approvalID).Get(tctx, nil); err != nil {
					return // decided first, or the turn ended
				}
			}
			if a := t.durable.approval(approvalID); a != nil && a.Decision == nil {
				t.durable.decide(ctx, a, contract.Decision{Reason: contract.ReasonApprovalTimedOut}, t.life.id(), t.logger)
			}
		})
	}
	err := workflow.Await(turnCtx, func() bool {
		return !waiting() || t.durable.closing() || t.pauseDue(ctx)
	})
	switch {
	case err != nil:
		if ctx.Err() == nil {
			t.durable.denyPending(ctx, p.Turn, contract.ReasonTurnCanceled, t.life.id(), t.logger)
		}
		return err
	case waiting() && t.durable.closing():
		t.durable.denyPending(ctx, p.Turn, contract.ReasonTaskClosed, t.life.id(), t.logger)
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
	if !t.rules.pauseAcrossRuns || t.arrivals.busy() || t.durable.closing() {
		return false
	}
	if t.asks.pending() && !t.rules.pauseDespiteAsks {
		return false // older rules: the asks held the run
	}
	return workflow.GetInfo(ctx).GetContinueAsNewSuggested() ||
		(t.args.ContinueAsNewEvents > 0 && historyLength(ctx) >= t.args.ContinueAsNewEvents)
}

// deniedResult is what the model reads for a call a person refused, or
// for a client capability's call the client did not answer.
func deniedResult(a *approvalRecord) string {
	d := a.Decision
	if a.Client {
		msg := fmt.Sprintf("error: the client did not run this call of %q", a.Capability)
		if d.Reason != "" {
			msg += " (" + d.Reason + ")"
		}
		return msg
	}
	switch d.Reason {
	case contract.ReasonApprovalTimedOut:
		return fmt.Sprintf("error: this call of %q needed a person's approval, which did not come in time (%s); it did not run", a.Capability, d.Reason)
	case contract.ReasonTaskClosed, contract.ReasonTurnCanceled:
		return fmt.Sprintf("error: this call of %q needed a person's approval; it did not run (%s)", a.Capability, d.Reason)
	}
	msg := fmt.Sprintf("error: a person refused this call of %q; it did not run", a.Capability)
	if d.Reason != "" {
		msg += ". Their reason: " + d.Reason
	}
	return msg
}

// decodeDecide reads and checks the decide update's argument against the
// task's approvals. results: rules.clientTools (a client capability's
// call is approved with its result).
func (r *approvalsRecord) decodeDecide(raw converter.RawValue, results bool) (contract.DecideArgs, *approvalRecord, error) {
	d, err := decodeDecideArgs(raw)
	if err != nil {
		return d, nil, err
	}
	a := r.approval(d.ID)
	if a == nil {
		return d, nil, &contract.Error{Type: contract.ErrApprovalNotFound, Message: fmt.Sprintf("the task has no approval %q; the approvals query lists them", d.ID)}
	}
	if a.Decision != nil {
		how := "denied"
		if a.Decision.Approve {
			how = "approved"
		}
		return d, nil, &contract.Error{Type: contract.ErrApprovalDecided, Message: fmt.Sprintf("approval %q was %s at %s (%s); the first decision stands", d.ID, how, a.Decision.DecidedAt, a.Decision.Reason)}
	}
	if !results {
		return d, a, nil
	}
	switch {
	case a.Client && *d.Approve && d.Result == nil:
		return d, nil, contract.Invalid("decide: %q is a call of the client capability %q, which your front end runs: approve it with its \"result\" (what the model reads), or refuse it with approve false", d.ID, a.Capability)
	case !a.Client && a.Question == "" && d.Result != nil:
		return d, nil, contract.Invalid("decide: \"result\" answers a client capability's call; %q is a call of %q, which the runtime runs once approved: leave result out", d.ID, a.Capability)
	case d.Result != nil && !*d.Approve:
		return d, nil, contract.Invalid("decide: a refused call has no result; send approve true with the result, or approve false without it")
	case d.Result != nil && len(*d.Result) > contract.MaxClientResultBytes:
		return d, nil, contract.Invalid("decide: result is %d bytes, at most %d; send a shorter result (or a file's reference)", len(*d.Result), contract.MaxClientResultBytes)
	case d.Result != nil && !utf8.ValidString(*d.Result):
		return d, nil, contract.Invalid("decide: result must be valid UTF-8 text")
	}
	return d, a, nil
}

// decodeDecideArgs reads decide's argument and checks its shape and bounds.
func decodeDecideArgs(raw converter.RawValue) (contract.DecideArgs, error) {
	var d contract.DecideArgs
	data, err := payloadJSON(raw)
	if err == nil {
		err = json.Unmarshal(data, &d)
	}
	switch {
	case err != nil:
		return d, contract.Invalid(`decide takes {"id": "t1.c1", "approve": true|false, "reason"?: string, "by"?: string}: %v`, err)
	case d.ID == "":
		return d, contract.Invalid(`decide: "id" names the approval (the approvals query lists them)`)
	case d.Approve == nil:
		return d, contract.Invalid(`decide: "approve" is required: true runs the call, false refuses it`)
	case len(d.Reason) > maxReasonBytes:
		return d, contract.Invalid("decide: reason is %d bytes, at most %d", len(d.Reason), maxReasonBytes)
	case len(d.By) > maxDeciderBytes:
		return d, contract.Invalid("decide: by is %d bytes, at most %d", len(d.By), maxDeciderBytes)
	}
	return d, nil
}

// routedDecide is decide's argument when it names an approval of a
// sub-task (a path; rules.nestedSubTasks), checked as decide checks any.
func routedDecide(raw converter.RawValue, on bool) (contract.DecideArgs, bool, error) {
	if !on {
		return contract.DecideArgs{}, false, nil
	}
	d, err := decodeDecideArgs(raw)
	if err != nil || !strings.Contains(d.ID, "/") {
		return d, false, nil
	}
	if d.Result != nil && len(*d.Result) > contract.MaxClientResultBytes {
		return d, true, contract.Invalid("decide: result is %d bytes, at most %d", len(*d.Result), contract.MaxClientResultBytes)
	}
	return d, true, nil
}

// registerApprovals installs the decide update and the approvals query.
func (t *task) registerApprovals(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, contract.QueryApprovals, func() ([]contract.Approval, error) {
		if t.opening.restoring() { // clients retry MESSAGES_LOADING
			return nil, &contract.Error{Type: contract.ErrMessagesLoading, Message: "the task is reading its state back after continuing as new; retry the query in a moment"}
		}
		out := make([]contract.Approval, 0, len(t.durable.Approvals))
		for _, a := range t.durable.Approvals {
			out = append(out, a.Approval)
		}
		return append(out, t.tree.pending()...), nil // a tree's, by path (tree.go)
	}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateDecide, t.decide, workflow.UpdateHandlerOptions{
		Validator: func(ctx workflow.Context, raw converter.RawValue) error {
			if t.opening.restoring() {
				return nil // checked by the handler once the state is read back
			}
			if d, ok, err := routedDecide(raw, t.rules.nestedSubTasks); ok {
				if a, _, _ := t.tree.find(d.ID); a == nil && err == nil {
					err = &contract.Error{Type: contract.ErrApprovalNotFound, Message: fmt.Sprintf("no sub-task of the task waits for approval %q; the approvals query lists them", d.ID)}
				}
				return appErrorOrNil(err)
			}
			_, _, err := t.durable.decodeDecide(raw, t.rules.clientTools)
			return appErrorOrNil(err)
		},
	})
}

// decide applies a decision; the turn waiting for it goes on.
func (t *task) decide(ctx workflow.Context, raw converter.RawValue) (contract.Approval, error) {
	if t.opening.restoring() {
		if err := workflow.Await(ctx, func() bool { return !t.opening.restoring() }); err != nil {
			return contract.Approval{}, err
		}
	}
	if d, ok, err := routedDecide(raw, t.rules.nestedSubTasks); ok {
		if err != nil {
			return contract.Approval{}, appError(err)
		}
		return t.decideRouted(ctx, d) // tree.go
	}
	// Checked again: a timeout may have decided it since the validator ran.
	d, a, err := t.durable.decodeDecide(raw, t.rules.clientTools)
	if err != nil {
		return contract.Approval{}, appError(err)
	}
	return t.durable.decideWith(ctx, a, d, t.life.id(), t.logger), nil
}

// decideWith applies a checked decide argument to its approval a.
func (r *approvalsRecord) decideWith(ctx workflow.Context, a *approvalRecord, d contract.DecideArgs, taskID string, logger log.Logger) contract.Approval {
	if d.Result != nil {
		a.Result = *d.Result
	}
	return r.decide(ctx, a, contract.Decision{Approve: *d.Approve, Reason: strings.TrimSpace(d.Reason), By: d.By}, taskID, logger)
}

func appErrorOrNil(err error) error {
	if err == nil {
		return nil
	}
	return appError(err)
}

// approvalLines are the pending approvals as the Web UI shows them.
func (r *approvalsRecord) approvalLines() string {
	var b strings.Builder
	for _, a := range r.Approvals {
		if a.Decision != nil {
			continue
		}
		what := "awaiting approval"
		if a.Client {
			what = "awaiting the client's result"
		} else if a.Question != "" {
			what = "awaiting an answer for the remote agent: " + truncate(a.Question, maxApprovalArgsShown) + " ·"
		}
		fmt.Fprintf(&b, "\n\n%s **%s** · `%s` · %s", what, a.ID, a.Capability, truncate(string(a.Arguments), maxApprovalArgsShown))
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

// approvalsRecord is the carried part of approvals.
type approvalsRecord struct {
	// Approvals are the pending approvals and the last decided ones
	// (rules.approvals); Paused is a turn waiting for some of them,
	// carried across continue-as-new.
	Approvals []approvalRecord `json:"approvals,omitempty"`
	Paused    *pausedTurn      `json:"paused,omitempty"`
}

// pausedTurn is the turn waiting for approvals, carried across
// continue-as-new (nil when none waits).
func (r *approvalsRecord) pausedTurn() *pausedTurn { return r.Paused }

// resumed: the paused turn goes on in this run.
func (r *approvalsRecord) resumed() { r.Paused = nil }
