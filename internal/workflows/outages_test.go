package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/internal/activities"
)

// A call is shown as retrying from its first report until it ends: a
// later report keeps the outage's start and moves the call to the newest;
// a report of a call not running (late, or not this run's) is dropped.
func TestOutagesShowTheLatestReportOfACallStillRunning(t *testing.T) {
	var o outages
	o.start(func() {})
	require.Nil(t, o.retrying())
	require.False(t, o.report(activities.RetryReport{Call: "model:t1:r1", Type: "MODEL_UNAVAILABLE"}), "not running")

	o.begin("model:t1:r1")
	o.begin("check:1")
	require.True(t, o.running("check:1"))
	require.True(t, o.report(activities.RetryReport{Call: "model:t1:r1", Type: "MODEL_UNAVAILABLE", Attempts: 1, At: "t0"}))
	require.True(t, o.report(activities.RetryReport{Call: "check:1", Type: "STORAGE", Attempts: 1, At: "t1"}))
	require.True(t, o.report(activities.RetryReport{Call: "model:t1:r1", Type: "MODEL_UNAVAILABLE", Attempts: 2, At: "t2"}))
	r := o.retrying()
	require.Equal(t, 2, r.Attempts, "the newest report")
	require.Equal(t, "t0", r.Since, "the outage began at the call's first report")

	require.True(t, o.end("model:t1:r1"), "it was shown as retrying")
	require.Equal(t, "STORAGE", o.retrying().Type)
	require.False(t, o.running("model:t1:r1"))
	o.begin("mcp:list")
	require.False(t, o.end("mcp:list"), "never reported")
	require.True(t, o.end("check:1"))
	require.Nil(t, o.retrying())
}

// Under rules.waitOutOutages a call retries without an attempt limit until
// the task's retry timeout (plus one attempt) and names itself for its
// reports; older rules keep the call's own options and send no name.
func TestWaitingOutAnOutageDropsTheAttemptLimit(t *testing.T) {
	base := workflow.ActivityOptions{StartToCloseTimeout: time.Minute, HeartbeatTimeout: 2 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 8, MaximumInterval: 30 * time.Second}}
	older := waitOut{timeout: time.Hour}
	require.Equal(t, base, older.options(base, 30*time.Second))
	require.Equal(t, activities.Retry{}, older.retry("model:t1:r1"))

	w := waitOut{on: true, timeout: time.Hour}
	o := w.options(base, 30*time.Second)
	require.Equal(t, 30*time.Second, o.HeartbeatTimeout)
	require.Equal(t, time.Hour+time.Minute, o.ScheduleToCloseTimeout)
	require.Equal(t, int32(0), o.RetryPolicy.MaximumAttempts)
	require.Equal(t, time.Minute, o.RetryPolicy.MaximumInterval)
	require.Equal(t, int32(8), base.RetryPolicy.MaximumAttempts, "the call's own policy is left as it was")
	require.Equal(t, 2*time.Second, w.options(base, 0).HeartbeatTimeout, "no heartbeat given: the call's")
	require.Equal(t, activities.Retry{Call: "model:t1:r1", Timeout: "1h0m0s"}, w.retry("model:t1:r1"))
}
