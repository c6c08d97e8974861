package starter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workflows"
)

// MaxApprovalIDBytes bounds an approval ID the client sends. The task's
// IDs are t<turn>.c<n>, far shorter; a longer one names no approval.
const MaxApprovalIDBytes = 128

// Approvals queries the task's approvals (the `approvals` query): the
// pending ones and the last decided ones, oldest first. A task without any
// answers an empty list. While the task reads its state back after
// continuing as new, the query is asked again as Messages does.
func (c *Client) Approvals(ctx context.Context, taskID string) ([]contract.Approval, error) {
	v, err := c.c.QueryWorkflow(ctx, taskID, "", contract.QueryApprovals)
	for deadline := time.Now().Add(workflows.MessagesLoadingRetryFor); workflows.IsMessagesLoading(err) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
		case <-time.After(workflows.MessagesLoadingRetryPause):
			v, err = c.c.QueryWorkflow(ctx, taskID, "", contract.QueryApprovals)
			continue
		}
		break
	}
	if err != nil {
		return nil, taskError(taskID, "querying the approvals of", err)
	}
	var out []contract.Approval
	if err := v.Get(&out); err != nil {
		return nil, fmt.Errorf("decoding the approvals of task %q: %w", taskID, err)
	}
	if out == nil {
		out = []contract.Approval{}
	}
	return out, nil
}

// Decide decides a pending approval with the `decide` update and waits
// until the task has recorded the decision; it returns the approval with
// its decision. d.Approve is required. An unknown ID is refused with
// APPROVAL_NOT_FOUND and an approval decided before with APPROVAL_DECIDED
// (the first decision stands); either way nothing is written. A reason
// over 2,000 bytes or a by over 256 bytes is refused by the task with
// INVALID_INPUT.
//
// A retried Decide is safe: the update ID is DecideUpdateID(d), the same
// for the same decision, so Temporal answers a repeat with the first
// outcome and the task records one decision. Once the task has continued
// as new, Temporal no longer knows the update ID and the task refuses the
// repeat with APPROVAL_DECIDED; Decide then reads the approval and, when
// its decision is the one asked for (approve, reason and by equal),
// returns it as the repeat's answer (the task records the reason trimmed
// of surrounding spaces).
func (c *Client) Decide(ctx context.Context, taskID string, d contract.DecideArgs) (contract.Approval, error) {
	var res contract.Approval
	if err := CheckDecide(d); err != nil {
		return res, err
	}
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		UpdateID:     DecideUpdateID(d),
		WorkflowID:   taskID,
		UpdateName:   contract.UpdateDecide,
		Args:         []any{d},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err == nil {
		return res, nil
	}
	err = taskError(taskID, "deciding an approval of", err)
	if contract.TypeOf(err) == ErrApprovalDecided {
		if a, ok := c.sameDecision(ctx, taskID, d); ok {
			return a, nil
		}
	}
	return contract.Approval{}, err
}

// sameDecision finds approval d.ID decided as d asks.
func (c *Client) sameDecision(ctx context.Context, taskID string, d contract.DecideArgs) (contract.Approval, bool) {
	list, err := c.Approvals(ctx, taskID)
	if err != nil {
		return contract.Approval{}, false
	}
	reason := strings.TrimSpace(d.Reason) // as the task records it
	for _, a := range list {
		if a.ID == d.ID && a.Decision != nil && a.Decision.Approve == *d.Approve &&
			a.Decision.Reason == reason && a.Decision.By == d.By {
			return a, true
		}
	}
	return contract.Approval{}, false
}

// Approve approves a pending approval: Decide with approve true. reason
// and by are optional (by names who decided, such as a user ID).
func (c *Client) Approve(ctx context.Context, taskID, approvalID, reason, by string) (contract.Approval, error) {
	yes := true
	return c.Decide(ctx, taskID, contract.DecideArgs{ID: approvalID, Approve: &yes, Reason: reason, By: by})
}

// Deny denies a pending approval: Decide with approve false. The model is
// told that a person refused the call, with the reason.
func (c *Client) Deny(ctx context.Context, taskID, approvalID, reason, by string) (contract.Approval, error) {
	no := false
	return c.Decide(ctx, taskID, contract.DecideArgs{ID: approvalID, Approve: &no, Reason: reason, By: by})
}

// Answer approves a client capability's call (contract.Approval.Client)
// with result, what the caller's front end's run of it returned: the model
// reads it as the call's result. For a remote agent's question
// (contract.Approval.Question) result is the reply sent to the agent.
func (c *Client) Answer(ctx context.Context, taskID, approvalID, result, by string) (contract.Approval, error) {
	yes := true
	return c.Decide(ctx, taskID, contract.DecideArgs{ID: approvalID, Approve: &yes, Result: &result, By: by})
}

// CheckDecide refuses, before anything is sent, a decide argument no task
// can take: no ID (or a blank one, over MaxApprovalIDBytes, not UTF-8), no
// approve, or text that is not UTF-8. The refusal is an INVALID_INPUT
// *contract.Error. The task checks the rest (the bounds of reason and by).
func CheckDecide(d contract.DecideArgs) error {
	switch {
	case strings.TrimSpace(d.ID) == "":
		return contract.Invalid("approval ID: must not be empty; the approvals query lists them (t<turn>.c<n>)")
	case len(d.ID) > MaxApprovalIDBytes:
		return contract.Invalid("approval ID: %d bytes is more than the %d allowed; approval IDs are t<turn>.c<n>", len(d.ID), MaxApprovalIDBytes)
	case !utf8.ValidString(d.ID):
		return contract.Invalid("approval ID: not valid UTF-8")
	case d.Approve == nil:
		return contract.Invalid("approve is required: true runs the capability call, false refuses it")
	case !utf8.ValidString(d.Reason):
		return contract.Invalid("reason: not valid UTF-8")
	case !utf8.ValidString(d.By):
		return contract.Invalid("by: not valid UTF-8")
	case d.Result != nil && !utf8.ValidString(*d.Result):
		return contract.Invalid("result: not valid UTF-8")
	case d.Result != nil && len(*d.Result) > contract.MaxClientResultBytes:
		return contract.Invalid("result: %d bytes is more than the %d allowed", len(*d.Result), contract.MaxClientResultBytes)
	}
	return nil
}

// DecideUpdateID is the update ID Decide sends: "decide:" and the approval
// ID, then the first 16 bytes of the SHA-256 of the decision (approve,
// reason, by, and a client call's result when there is one) in hex. A repeat of the same decision has the same ID, so
// Temporal answers it with the first outcome; any other decision of the
// same approval has another ID, so the task's validator refuses it with
// APPROVAL_DECIDED instead of Temporal answering it with the first
// decision.
func DecideUpdateID(d contract.DecideArgs) string {
	approve := "deny"
	if d.Approve != nil && *d.Approve {
		approve = "approve"
	}
	decision := approve + "\x00" + d.Reason + "\x00" + d.By
	if d.Result != nil {
		decision += "\x00result\x00" + *d.Result
	}
	sum := sha256.Sum256([]byte(decision))
	return "decide:" + d.ID + ":" + hex.EncodeToString(sum[:16])
}
