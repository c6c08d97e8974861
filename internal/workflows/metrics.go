package workflows

import (
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
)

// The runtime's workflow-side metrics, recorded through
// workflow.GetMetricsHandler: the SDK drops them while a workflow replays,
// so a turn is counted once however often its history is replayed. The
// worker's handler (package telemetry) exports them in Prometheus format
// with the SDK's tags (namespace, task_queue, workflow_type).
const (
	// MetricTurns counts finished turns by outcome: answered, canceled, failed.
	MetricTurns = "agenttask_turns_total"
	// MetricInputsRejected counts refused inputs by error type (the
	// validator's, the arrival check's, a refused signal's).
	MetricInputsRejected = "agenttask_inputs_rejected_total"
	// MetricApprovalsPending is a gauge: capability calls waiting for a
	// person's decision. Each task reports its own count tagged with
	// MetricTaskTag; package telemetry's handler sums them and drops the tag.
	MetricApprovalsPending = "agenttask_approvals_pending"
	// MetricTaskTag carries the task ID on the approvals gauge only.
	MetricTaskTag = "task_id"
)

// Outcomes of MetricTurns.
const (
	TurnAnswered = "answered"
	TurnCanceled = "canceled"
	TurnFailed   = "failed"
)

// countTurn counts a finished turn.
func countTurn(ctx workflow.Context, outcome string) {
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"outcome": outcome}).Counter(MetricTurns).Inc(1)
}

// countRejected counts a refused input by the type of err (a contract.Error
// or an application error).
func countRejected(ctx workflow.Context, err error) {
	typ := contract.TypeOf(err)
	var ae *temporal.ApplicationError
	if typ == "" && errors.As(err, &ae) {
		typ = ae.Type()
	}
	if typ == "" {
		typ = contract.ErrInvalidInput
	}
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"type": typ}).Counter(MetricInputsRejected).Inc(1)
}

// gaugeApprovals reports how many approvals (pending) the task (taskID)
// waits for; call it after every change.
func gaugeApprovals(ctx workflow.Context, taskID string, pending int) {
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{MetricTaskTag: taskID}).
		Gauge(MetricApprovalsPending).Update(float64(pending))
}

// endApprovals reports no pending approvals for a task that ends
// (completes, fails or is canceled; not when it continues as new, whose
// next run carries its approvals; taskID names the task).
func endApprovals(ctx workflow.Context, taskID string) {
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{MetricTaskTag: taskID}).
		Gauge(MetricApprovalsPending).Update(0)
}
