package refunds

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// callRefund runs IssueRefund as the runtime does: by name, with the
// model's arguments as one JSON argument, the result read as JSON, under the
// capability's default retry policy.
func callRefund(ctx workflow.Context, args string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           TaskQueue,
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5},
	})
	var out json.RawMessage
	if err := workflow.ExecuteActivity(ctx, ActivityName, json.RawMessage(args)).Get(ctx, &out); err != nil {
		return "", err
	}
	return string(out), nil
}

// run executes callRefund in a test environment and counts IssueRefund's attempts.
func run(t *testing.T, args string) (string, int32, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	Register(env)
	env.RegisterWorkflow(callRefund)
	var attempts int32
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) { attempts = info.Attempt })
	env.ExecuteWorkflow(callRefund, args)
	require.True(t, env.IsWorkflowCompleted())
	var out string
	err := env.GetWorkflowError()
	if err == nil {
		require.NoError(t, env.GetWorkflowResult(&out))
	}
	return out, attempts, err
}

func TestIssueRefund(t *testing.T) {
	out, attempts, err := run(t, `{"order_id": "A-1001", "amount": 42.5, "reason": "damaged"}`)
	require.NoError(t, err)
	require.EqualValues(t, 1, attempts)
	var r Refund
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Equal(t, "A-1001", r.OrderID)
	require.Equal(t, 42.5, r.Amount)
	require.Equal(t, "issued", r.Status)
	require.Regexp(t, `^rf_[0-9a-f]{12}$`, r.RefundID)
}

func TestIssueRefundMissingOrderIsNotRetried(t *testing.T) {
	_, attempts, err := run(t, `{"order_id": "missing-7", "amount": 10}`)
	require.Error(t, err)
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, ErrOrderNotFound, ae.Type())
	require.True(t, ae.NonRetryable())
	require.Contains(t, ae.Message(), `there is no order "missing-7"`)
	require.EqualValues(t, 1, attempts)
}

func TestIssueRefundFlakyOrderSucceedsOnRetry(t *testing.T) {
	out, attempts, err := run(t, `{"order_id": "flaky-3", "amount": 5}`)
	require.NoError(t, err)
	require.EqualValues(t, 2, attempts)
	require.Contains(t, out, `"status":"issued"`)
}

func TestIssueRefundRefusesANonPositiveAmount(t *testing.T) {
	_, attempts, err := run(t, `{"order_id": "A-1", "amount": 0}`)
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, ErrInvalidAmount, ae.Type())
	require.EqualValues(t, 1, attempts)
}
