package integration

import (
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"gocloud.dev/blob"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/faultblob"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// Outages are waited out: a model provider or a store that fails for three
// minutes delays a task, visibly, and changes nothing else.

const outage = 3 * time.Minute

// holdThroughOutage checks, for the length of the outage, that the task is
// working, reports the retrying call and has not moved on or failed. It
// returns the last report seen.
func holdThroughOutage(t *testing.T, id string, wantType, wantMessage string, outputs int) contract.Retrying {
	t.Helper()
	var st contract.Status
	eventually(t, time.Minute, "status.retrying", func() bool {
		st = status(t, id)
		return st.Retrying != nil
	})
	first := *st.Retrying
	deadline := time.Now().Add(outage)
	for time.Now().Before(deadline) {
		st = status(t, id)
		require.Equal(t, contract.StateWorking, st.State, "the task keeps working through the outage")
		require.NotNil(t, st.Retrying, "status.retrying names the outage while it lasts")
		require.Equal(t, wantType, st.Retrying.Type)
		require.Contains(t, st.Retrying.Message, wantMessage)
		require.Nil(t, st.Error, "error is set only when a task fails")
		require.Equal(t, outputs, st.Outputs, "nothing answered during the outage")
		require.Equal(t, first.Since, st.Retrying.Since, "since is when the outage began")
		next := mustTime(t, st.Retrying.NextAt)
		require.False(t, next.Before(mustTime(t, st.Retrying.Since)))
		time.Sleep(5 * time.Second)
	}
	require.Greater(t, st.Retrying.Attempts, first.Attempts, "attempts count up while the outage lasts")
	return *st.Retrying
}

func TestModelOutageIsWaitedOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker()
	var down atomic.Bool
	var served atomic.Int32
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if down.Load() {
			return testmodel.Reply{Status: 503, ErrorMessage: "upstream overloaded"}
		}
		served.Add(1)
		return testmodel.Echo(c)
	})
	id := "model-outage"
	run := startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("before the outage")})
	waitOutputs(t, id, 1)

	down.Store(true)
	res, err := sendUpdate(t, id, text("during the outage"))
	require.NoError(t, err, "an input is taken whatever the model's state")
	last := holdThroughOutage(t, id, "MODEL_UNAVAILABLE", "503", 1)
	t.Logf("after %s: %d attempts, next at %s", outage, last.Attempts, last.NextAt)

	down.Store(false)
	// The next attempt may be a minute away (backoff to one minute).
	st := waitOutputsWithin(t, id, 2, 3*time.Minute)
	require.Nil(t, st.Retrying, "retrying clears once the call succeeds")
	require.Equal(t, 2, st.Turns, "the input was answered by one turn")
	require.Equal(t, int32(2), served.Load(), "answered exactly once")
	require.Zero(t, st.Rejected)
	msgs := messages(t, id, nil)
	require.Len(t, msgs, 4)
	require.Equal(t, res.ReceivedAt, msgs[2].ReceivedAt)
	require.Equal(t, "during the outage", *msgs[2].Message[0].Text)
	require.Equal(t, contract.TypeOutput, msgs[3].Type)
	requireSeedOrder(t, msgs)
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	var result contract.Result
	require.NoError(t, run.Get(ctxT(t, time.Minute), &result))
	require.Equal(t, 2, result.Turns)
}

func TestStorageOutageDuringArrivalIsWaitedOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sw := &faultblob.Switch{}
	h.wrapMount = func(b *blob.Bucket) *blob.Bucket { return faultblob.Wrap(b, sw) }
	h.startWorker()
	m := h.mountSpec("files")
	id := "storage-outage"
	spec := agent("looker")
	spec["mount"] = m
	run := startTask(t, h, id, map[string]any{"agent": spec})
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: `{"message":"I see it","attachments":[]}`}
	})
	part := upload(t, m, id, "cat.png", "image/png", pngBytes)

	sw.On(nil)
	in := map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "what is this?"}, partMap(part)}}
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", in))
	last := holdThroughOutage(t, id, contract.ErrInternal, "unavailable", 0)
	t.Logf("after %s: %d attempts, %d storage operations refused", outage, last.Attempts, sw.Failures())
	st := status(t, id)
	require.Zero(t, st.Rejected, "the input is not refused while storage is down")
	require.Zero(t, h.model.CallCount(), "no model call before the input is checked")
	during := messages(t, id, nil)
	require.Len(t, during, 1, "an input in its arrival check is received, so listed")
	require.NotEmpty(t, during[0].ReceivedAt)
	require.Empty(t, during[0].CommittedAt)
	require.Equal(t, "what is this?", *during[0].Message[0].Text)
	require.Equal(t, 1, st.Messages)

	sw.Off()
	st = waitOutputsWithin(t, id, 1, 3*time.Minute) // the next attempt may be a minute away
	require.Nil(t, st.Retrying)
	require.Zero(t, st.Rejected)
	require.Equal(t, 1, st.Turns)
	require.Equal(t, 1, h.model.CallCount(), "answered exactly once")
	msgs := messages(t, id, nil)
	require.Len(t, msgs, 2)
	require.Equal(t, int64(len(pngBytes)), *msgs[0].Message[1].SizeBytes, "checked on arrival once storage is back")
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	require.NoError(t, run.Get(ctxT(t, time.Minute), nil))
}

func TestModelRetryTimeoutEndsTheTask(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Status: 502, ErrorMessage: "bad gateway"}
	})
	id := "retry-timeout"
	started := time.Now()
	run := startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("hi"), "modelRetryTimeout": "20s"})
	err := run.Get(ctxT(t, 2*time.Minute), nil)
	took := time.Since(started)
	require.Equal(t, contract.ErrModel, errType(err), "%v", err)
	require.Contains(t, err.Error(), "bad gateway")
	require.Contains(t, err.Error(), "modelRetryTimeout 20s")
	require.GreaterOrEqual(t, took, 20*time.Second, "the task waited the whole modelRetryTimeout")
	// Soon after it, as the worker measured from the call's scheduling (the
	// wall clock here also counts the start, slow on a loaded machine): the
	// last attempt runs at the limit, not a backoff later.
	m := regexp.MustCompile(`still failing after ((?:\d+h)?(?:\d+m)?\d+s)`).FindStringSubmatch(err.Error())
	require.NotNil(t, m, "%v", err)
	waited, perr := time.ParseDuration(m[1])
	require.NoError(t, perr)
	require.GreaterOrEqual(t, waited, 20*time.Second)
	require.Less(t, waited, 30*time.Second, "the last attempt ran at the limit")
	require.Less(t, took, 90*time.Second)
	require.GreaterOrEqual(t, h.model.CallCount(), 5)
	st := status(t, id)
	require.Equal(t, contract.StateFailed, st.State)
	require.Equal(t, contract.ErrModel, st.Error.Type)
	require.Nil(t, st.Retrying)
	recordHistory(t, id, run.GetRunID(), "model-retry-timeout") // retry reports, then MODEL_ERROR

	// A bad value is refused at start.
	bad := startTask(t, h, "retry-timeout-bad", map[string]any{"agent": agent("a"), "modelRetryTimeout": "forever"})
	err = bad.Get(ctxT(t, 30*time.Second), nil)
	require.Equal(t, contract.ErrInvalidInput, errType(err), "%v", err)
	require.Contains(t, err.Error(), "modelRetryTimeout")
}

// A repeated input ID creates no second input: by the send update's ID, by
// input_id in a send or a signal, and after the task has continued as new.
func TestRepeatedInputIDsCreateNothing(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "input-ids"
	run := startTask(t, h, id, map[string]any{"agent": agent("a"), "continueAsNewEvents": 100})
	sendWithID := func(updateID string, in any) contract.SendResult {
		t.Helper()
		u, err := sdk.UpdateWorkflow(ctxT(t, 10*time.Second), client.UpdateWorkflowOptions{
			WorkflowID: id, UpdateID: updateID, UpdateName: "send", Args: []any{in}, WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		require.NoError(t, err)
		var res contract.SendResult
		require.NoError(t, u.Get(ctxT(t, 10*time.Second), &res))
		return res
	}
	withID := func(s, inputID string) map[string]any {
		m := text(s)
		m["input_id"] = inputID
		return m
	}
	count := func(s string) int {
		n := 0
		for _, m := range messages(t, id, nil) {
			for _, p := range m.Message {
				if p.Text != nil && *p.Text == s && m.Type == contract.TypeInput {
					n++
				}
			}
			_, leaked := m.Values["input_id"]
			require.False(t, leaked, "input_id never shows in messages")
		}
		return n
	}

	first := sendWithID("update-1", text("one"))
	require.Equal(t, first, sendWithID("update-1", text("one")), "the server's own dedup, within the run")
	second := sendWithID("update-2", withID("two", "id-two"))
	require.Equal(t, second, sendWithID("update-3", withID("two", "id-two")), "input_id in the body: the workflow's dedup")
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", withID("three", "id-three")))
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", withID("three", "id-three")))
	waitOutputs(t, id, 1)
	eventually(t, 30*time.Second, "queue answered", func() bool { st := status(t, id); return st.Queued == 0 && st.State == contract.StateWaiting })
	for _, s := range []string{"one", "two", "three"} {
		require.Equal(t, 1, count(s), "%q is one input", s)
	}
	// A bad input_id is refused like any bad key.
	_, err := sendUpdate(t, id, withID("four", strings.Repeat("x", 129)))
	require.Equal(t, contract.ErrInvalidInput, errType(err), "%v", err)

	// Continue as new (at 100 events), then repeat every ID.
	for i := 0; status(t, id).Run < 2; i++ {
		require.Less(t, i, 40, "the task continues as new within 40 turns")
		out := status(t, id).Outputs
		sendWithID("", text("filler"))
		waitOutputs(t, id, out+1)
	}
	require.Equal(t, first, sendWithID("update-1", text("one")), "the update ID is remembered across continue-as-new")
	require.Equal(t, second, sendWithID("update-9", withID("two", "id-two")))
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", withID("three", "id-three")))
	fresh := sendWithID("update-10", text("fresh"))
	require.NotEqual(t, first.ReceivedAt, fresh.ReceivedAt)
	eventually(t, 30*time.Second, "queue answered", func() bool { st := status(t, id); return st.Queued == 0 && st.State == contract.StateWaiting })
	for _, s := range []string{"one", "two", "three", "fresh"} {
		require.Equal(t, 1, count(s), "%q is one input after continue-as-new", s)
	}
	recordHistory(t, id, run.GetRunID(), "input-ids-first-run")
	recordHistory(t, id, "", "input-ids-latest-run") // repeated IDs met after continue-as-new
}
