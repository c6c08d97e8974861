// Package refunds is a sample of the caller's side of an activity capability
// (docs/content.md#activity-capabilities): an ordinary Temporal activity,
// IssueRefund, that a worker of the caller's registers on its own task queue
// ("payments") and an agent calls as a tool with
//
//	{"name": "refund", "kind": "activity", "activity": "IssueRefund", "taskQueue": "payments", ...}
//
// The runtime passes the model's arguments (checked against the
// capability's parameters) as the activity's one JSON argument and shows its
// JSON result to the model. Nothing here depends on the runtime: only the
// Temporal SDK. The behaviours are those a sample needs to show:
//
//   - an order ID starting with "missing" fails with a non-retryable
//     application error of type ORDER_NOT_FOUND, which the model reads as the
//     tool result (type and message);
//   - an order ID starting with "flaky" fails its first attempt with a
//     retryable error, which the capability's retry policy retries;
//   - any other order is refunded.
package refunds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// Names a spec refers to.
const (
	// ActivityName is the activity type IssueRefund is registered as.
	ActivityName = "IssueRefund"
	// TaskQueue is the queue the sample worker polls.
	TaskQueue = "payments"
)

// Error types of IssueRefund's non-retryable failures.
const (
	ErrOrderNotFound = "ORDER_NOT_FOUND"
	ErrInvalidAmount = "INVALID_AMOUNT"
)

// Request is IssueRefund's argument: the model's arguments, as the
// capability's parameters describe them.
type Request struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
	Reason  string  `json:"reason,omitempty"`
}

// Refund is IssueRefund's result, what the model reads.
type Refund struct {
	RefundID string  `json:"refund_id"`
	OrderID  string  `json:"order_id"`
	Amount   float64 `json:"amount"`
	Status   string  `json:"status"`
}

// IssueRefund refunds an order (pretend). The refund ID derives from the
// workflow and activity IDs, so a retried attempt issues the same refund.
func IssueRefund(ctx context.Context, req Request) (*Refund, error) {
	info := activity.GetInfo(ctx)
	log := activity.GetLogger(ctx)
	switch {
	case strings.TrimSpace(req.OrderID) == "":
		return nil, temporal.NewNonRetryableApplicationError("order_id is empty; give the ID of the order to refund", ErrOrderNotFound, nil)
	case strings.HasPrefix(req.OrderID, "missing"):
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("there is no order %q", req.OrderID), ErrOrderNotFound, nil)
	case req.Amount <= 0:
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the amount must be positive, not %v", req.Amount), ErrInvalidAmount, nil)
	case strings.HasPrefix(req.OrderID, "flaky") && info.Attempt <= 1:
		log.Info("payments service unavailable; the attempt will be retried", "order_id", req.OrderID, "attempt", info.Attempt)
		return nil, temporal.NewApplicationError("the payments service is briefly unavailable", "PAYMENTS_UNAVAILABLE")
	}
	sum := sha256.Sum256([]byte(info.WorkflowExecution.ID + "\x00" + info.ActivityID + "\x00" + req.OrderID))
	out := &Refund{RefundID: "rf_" + hex.EncodeToString(sum[:6]), OrderID: req.OrderID, Amount: req.Amount, Status: "issued"}
	log.Info("refund issued", "order_id", req.OrderID, "amount", req.Amount, "refund_id", out.RefundID, "attempt", info.Attempt)
	return out, nil
}

// Register registers IssueRefund under ActivityName on a worker
// (worker.Worker is an ActivityRegistry) or a test environment.
func Register(w worker.ActivityRegistry) {
	w.RegisterActivityWithOptions(IssueRefund, activity.RegisterOptions{Name: ActivityName})
}
