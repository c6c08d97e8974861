package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workflows"
)

// The helpers here use only the Temporal SDK client and the names of the
// contract, as a service in another language would.

func text(s string) map[string]any {
	return map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": s}}}
}

func agent(name string) map[string]any {
	return map[string]any{"name": name, "model": "test/echo", "instructions": "Answer briefly."}
}

func startTask(t *testing.T, h *harness, id string, args map[string]any) client.WorkflowRun {
	t.Helper()
	run, err := sdk.ExecuteWorkflow(ctxT(t, 10*time.Second), client.StartWorkflowOptions{ID: id, TaskQueue: h.queue}, "AgentTask", args)
	require.NoError(t, err)
	return run
}

// status is the task's status. While a run that continued as new by
// reference reads its state back, status answers only "working" (Run 0):
// that placeholder is asked again, since tests compare counters.
func status(t *testing.T, id string) contract.Status {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		v, err := sdk.QueryWorkflow(ctxT(t, 30*time.Second), id, "", "status")
		require.NoError(t, err)
		var st contract.Status
		require.NoError(t, v.Get(&st))
		if st.Run != 0 || time.Now().After(deadline) {
			return st
		}
	}
}

func messages(t *testing.T, id string, page any) []contract.Message {
	t.Helper()
	var args []any
	if page != nil {
		args = append(args, page)
	}
	// MESSAGES_LOADING (earlier runs' entries still being read from the
	// store) is retried, as the module's own clients do.
	v, err := sdk.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "messages", args...)
	for deadline := time.Now().Add(workflows.MessagesLoadingRetryFor); workflows.IsMessagesLoading(err) && time.Now().Before(deadline); {
		time.Sleep(workflows.MessagesLoadingRetryPause)
		v, err = sdk.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "messages", args...)
	}
	require.NoError(t, err)
	var ms []contract.Message
	require.NoError(t, v.Get(&ms))
	return ms
}

// eventually polls cond every 10ms until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitOutputs polls status until n outputs. A query can fail while no
// worker serves the task (one was just killed), so failures are retried.
func waitOutputs(t *testing.T, id string, n int) contract.Status {
	t.Helper()
	return waitOutputsWithin(t, id, n, time.Minute)
}

// waitOutputsWithin waits for n outputs up to timeout: longer than a
// minute where recovery itself takes one (a killed worker's heartbeat
// timeout, retries backing off through an outage).
func waitOutputsWithin(t *testing.T, id string, n int, timeout time.Duration) contract.Status {
	t.Helper()
	var st contract.Status
	eventually(t, timeout, fmt.Sprintf("%d outputs", n), func() bool {
		v, err := sdk.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "status")
		if err != nil {
			return false
		}
		st = contract.Status{}
		return v.Get(&st) == nil && st.Outputs >= n
	})
	return st
}

func sendUpdate(t *testing.T, id string, in any) (contract.SendResult, error) {
	t.Helper()
	// Generous: the update completes after the input's arrival check (file
	// hashes over S3, a restore by reference), slow on a loaded machine.
	h, err := sdk.UpdateWorkflow(ctxT(t, time.Minute), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: "send", Args: []any{in}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return contract.SendResult{}, err
	}
	var res contract.SendResult
	err = h.Get(ctxT(t, time.Minute), &res)
	return res, err
}

func errType(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Type()
	}
	return ""
}

// history reads a run's events.
func history(t *testing.T, id, runID string) []*historypb.HistoryEvent {
	t.Helper()
	return historyWith(t, sdk, id, runID)
}

// historyWith reads a run's events through c.
func historyWith(t *testing.T, c client.Client, id, runID string) []*historypb.HistoryEvent {
	t.Helper()
	it := c.GetWorkflowHistory(ctxT(t, time.Minute), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		events = append(events, e)
	}
	return events
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := contract.ParseTime(s)
	require.NoError(t, err, "instant %q", s)
	require.Equal(t, byte('Z'), s[len(s)-1], "instants end in Z: %q", s)
	return tm
}

// requireSeedOrder checks the guarantees of docs/contract.md#time-and-order
// on a messages list.
func requireSeedOrder(t *testing.T, msgs []contract.Message) {
	t.Helper()
	var prev time.Time
	prevType := ""
	committedDone := false
	for i, m := range msgs {
		require.NotNil(t, m.Message, "entry %d has message", i)
		if m.Type == contract.TypeInput {
			require.NotEmpty(t, m.ReceivedAt, "entry %d: every input has received_at", i)
		} else {
			require.Equal(t, contract.TypeOutput, m.Type)
			require.Empty(t, m.ReceivedAt, "entry %d: an output has no received_at", i)
		}
		if m.CommittedAt == "" {
			require.Equal(t, contract.TypeInput, m.Type, "only inputs may be uncommitted")
			committedDone = true
			continue
		}
		require.False(t, committedDone, "entry %d: committed entries come before uncommitted ones", i)
		c := mustTime(t, m.CommittedAt)
		if i > 0 {
			if m.Type == contract.TypeInput && prevType == contract.TypeInput {
				require.False(t, c.Before(prev), "entry %d out of order", i)
			} else {
				require.True(t, c.After(prev), "entry %d: committed_at strictly increases across turns", i)
			}
		}
		if m.Type == contract.TypeInput {
			require.False(t, c.Before(mustTime(t, m.ReceivedAt)), "entry %d committed before it was received", i)
		}
		prev, prevType = c, m.Type
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

var _ = context.Background
