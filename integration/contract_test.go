package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// A second service that knows only the Temporal SDK and the contract's names
// starts a task, sends inputs by signal and by update, reads status and
// messages, cancels a turn, closes the task and reads its result.
func TestSecondServiceUsesOnlyTheSDKAndTheNames(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "svc-" + t.Name()
	spec := agent("support")
	spec["parameters"] = map[string]any{"type": "object", "properties": map[string]any{"ticket_id": map[string]any{"type": "integer"}}}
	spec["exposes"] = map[string]any{"type": "object", "properties": map[string]any{"priority": map[string]any{"type": "string", "enum": []any{"low", "high"}}}, "required": []any{"priority"}}
	spec["maxTokens"] = 200
	first := text("My order is late.")
	first["ticket_id"] = 42
	run := startTask(t, h, id, map[string]any{"agent": spec, "input": first})

	st := waitOutputs(t, id, 1)
	require.Equal(t, contract.StateWaiting, st.State)
	require.Equal(t, 1, st.Turns)
	require.Nil(t, st.Error)
	require.Equal(t, "end", st.LastTurn.StopReason)
	require.Greater(t, st.Usage.InputTokens, 0)
	// The model was asked for structured output, and max_tokens was honoured.
	call := h.model.Calls()[0]
	require.NotNil(t, call.JSONSchema)
	require.Equal(t, 200, call.MaxTokens)

	// By signal, and by update (which replies with received_at once queued).
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("by signal")))
	res, err := sendUpdate(t, id, text("by update"))
	require.NoError(t, err)
	mustTime(t, res.ReceivedAt)
	// The two inputs may be answered by one turn or by two: wait until
	// every input is answered, so what follows compares a still list.
	eventually(t, time.Minute, "both inputs answered", func() bool {
		st := status(t, id)
		return st.Outputs >= 2 && st.Queued == 0 && st.State == contract.StateWaiting
	})

	msgs := messages(t, id, nil)
	requireSeedOrder(t, msgs)
	require.GreaterOrEqual(t, len(msgs), 4)
	require.JSONEq(t, `42`, string(msgs[0].Values["ticket_id"]))
	for _, m := range msgs {
		if m.Type == contract.TypeOutput {
			require.Contains(t, m.Values, "priority", "every exposes key on every output")
		}
	}
	// Paging: after the first entry, one entry.
	page := messages(t, id, map[string]any{"after": 1, "limit": 1})
	require.Len(t, page, 1)
	require.Equal(t, msgs[1], page[0])

	// A bad input by update is refused with a typed error and changes nothing.
	before := messages(t, id, nil)
	_, err = sendUpdate(t, id, map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "x"}}, "ticket_id": "forty-two"})
	require.Error(t, err)
	require.Equal(t, contract.ErrInvalidInput, errType(err))
	require.Contains(t, err.Error(), "ticket_id")
	// A bad input by signal is recorded in status, and changes nothing else.
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", map[string]any{"message": "not a list"}))
	eventually(t, time.Minute, "the rejection", func() bool { return status(t, id).Rejected == 1 })
	require.Equal(t, before, messages(t, id, nil))

	// Cancel a running turn: the model is held, the call is cut off promptly.
	h.model.Hold()
	callsBefore := h.model.CallCount()
	_, err = sendUpdate(t, id, text("never mind"))
	require.NoError(t, err)
	require.NoError(t, h.model.WaitForCalls(ctxT(t, time.Minute), callsBefore+1))
	require.Equal(t, contract.StateWorking, status(t, id).State)
	canceledAt := time.Now()
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "cancel-turn", nil))
	require.NoError(t, h.model.WaitForCancelled(ctxT(t, time.Minute), 1))
	t.Logf("model call abandoned %s after cancel-turn", time.Since(canceledAt))
	// Promptly: well before the model call's 30 s heartbeat timeout, the
	// only other way a held call would end (typically under a second).
	require.Less(t, time.Since(canceledAt), 15*time.Second, "cancel-turn stops the model call promptly")
	eventually(t, time.Minute, "the canceled turn", func() bool {
		st := status(t, id)
		return st.LastTurn.Canceled && st.State == contract.StateWaiting
	})
	h.model.Release()
	msgs = messages(t, id, nil)
	last := msgs[len(msgs)-1]
	require.Equal(t, contract.TypeInput, last.Type, "a canceled turn produces no output")
	require.NotEmpty(t, last.CommittedAt, "a canceled turn commits its input")
	// cancel-turn with no turn running does nothing.
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "cancel-turn", "ignored"))

	// Close: the task answers what it received, then completes.
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("last words")))
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	var result contract.Result
	require.NoError(t, run.Get(ctxT(t, 30*time.Second), &result))
	require.Equal(t, contract.StateCompleted, result.State)
	require.Equal(t, contract.EndedByClose, result.EndedBy)
	require.NotNil(t, result.LastOutput)
	require.Contains(t, *result.LastOutput.Message[0].Text, "last words")
	final := messages(t, id, nil)
	requireSeedOrder(t, final)
	require.Equal(t, contract.TypeOutput, final[len(final)-1].Type)
	require.Equal(t, contract.StateCompleted, status(t, id).State)

	// After completion, an update is refused.
	_, err = sendUpdate(t, id, text("hello?"))
	require.Error(t, err)
	recordHistory(t, id, run.GetRunID(), "conversation-signals-updates-cancel-close")
}

func TestBadStartFailsTheWorkflowWithItsType(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	cases := map[string]map[string]any{
		"schema keyword":           {"agent": map[string]any{"name": "a", "model": "test/echo", "parameters": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string", "pattern": "^a"}}}}},
		"well-known key":           {"agent": map[string]any{"name": "a", "model": "test/echo", "exposes": map[string]any{"type": "object", "properties": map[string]any{"committed_at": map[string]any{"type": "string"}}}}},
		"not an object":            {"agent": "support"},
		"bad mode":                 {"agent": agent("a"), "mode": "forever"},
		"bad CEL":                  {"agent": map[string]any{"name": "a", "model": "test/echo", "guardrails": []any{map[string]any{"name": "g", "expression": "size(i) >", "message": "m"}}}},
		"non-bool CEL":             {"agent": map[string]any{"name": "a", "model": "test/echo", "guardrails": []any{map[string]any{"name": "g", "expression": "1 + 1", "message": "m"}}}},
		"bad mount ref root":       {"agent": map[string]any{"name": "a", "model": "test/echo", "mount": map[string]any{"root": "Task!", "url": "mem://"}}},
		"oversized text, no mount": {"agent": agent("a"), "input": text(strings.Repeat("x", 100_001))},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			run := startTask(t, h, "bad-"+strings.ReplaceAll(name, " ", "-"), args)
			err := run.Get(ctxT(t, 20*time.Second), nil)
			require.Error(t, err)
			require.Equal(t, contract.ErrInvalidInput, errType(err), "%v", err)
			// Refused in the first workflow task: no activity was ever scheduled.
			for _, e := range history(t, run.GetID(), run.GetRunID()) {
				require.NotEqual(t, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, e.GetEventType())
			}
			if name == "schema keyword" {
				recordHistory(t, run.GetID(), run.GetRunID(), "refused-start")
			}
		})
	}
	require.Zero(t, h.model.CallCount())
}

func TestModelFailuresAreTyped(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Status: 400, ErrorMessage: "unsupported parameter"}
	})
	run := startTask(t, h, "model-400", map[string]any{"agent": agent("a"), "input": text("hi")})
	err := run.Get(ctxT(t, 30*time.Second), nil)
	require.Equal(t, contract.ErrModel, errType(err), "%v", err)
	require.Contains(t, err.Error(), "unsupported parameter")
	require.Equal(t, 1, h.model.CallCount(), "a 4xx other than 429 is not retried")
	st := status(t, "model-400")
	require.Equal(t, contract.StateFailed, st.State)
	require.Equal(t, contract.ErrModel, st.Error.Type)
}

func TestTransientModelErrorsAreRetried(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		switch c.Seq {
		case 1:
			return testmodel.Reply{Status: 429, ErrorMessage: "slow down", RetryAfter: "1"}
		case 2:
			return testmodel.Reply{Status: 503, ErrorMessage: "overloaded"}
		}
		return testmodel.Echo(c)
	})
	run := startTask(t, h, "model-retry", map[string]any{"agent": agent("a"), "input": text("hi"), "mode": "single"})
	var res contract.Result
	require.NoError(t, run.Get(ctxT(t, 60*time.Second), &res))
	require.Equal(t, 3, h.model.CallCount())
	require.Equal(t, 1, res.Turns)
}

func TestExposesRetriesThenFails(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: `{"message":"hi"}`} // never carries "priority"
	})
	spec := agent("a")
	spec["exposes"] = map[string]any{"type": "object", "properties": map[string]any{"priority": map[string]any{"type": "string"}}}
	run := startTask(t, h, "exposes-missing", map[string]any{"agent": spec, "input": text("hi")})
	err := run.Get(ctxT(t, 30*time.Second), nil)
	require.Equal(t, contract.ErrModel, errType(err), "%v", err)
	require.Contains(t, err.Error(), "priority")
	require.Equal(t, 3, h.model.CallCount(), "bounded: three calls, then MODEL_ERROR")
	recordHistory(t, run.GetID(), run.GetRunID(), "model-error")
}

func TestSingleModeAndIdleTimeout(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	single := startTask(t, h, "single", map[string]any{"agent": agent("a"), "input": text("once"), "mode": "single"})
	var res contract.Result
	require.NoError(t, single.Get(ctxT(t, 30*time.Second), &res))
	require.Equal(t, contract.EndedBySingle, res.EndedBy)
	recordHistory(t, single.GetID(), single.GetRunID(), "single")

	idle := startTask(t, h, "idle", map[string]any{"agent": agent("a"), "input": text("hi"), "idleTimeout": "2s"})
	start := time.Now()
	require.NoError(t, idle.Get(ctxT(t, 30*time.Second), &res))
	require.Equal(t, contract.EndedByIdle, res.EndedBy)
	require.GreaterOrEqual(t, time.Since(start), 2*time.Second)
	recordHistory(t, idle.GetID(), idle.GetRunID(), "idle-timeout")
}

// Continue-as-new is invisible to readers: the list stays complete and
// ordered across runs, served from memory and from the transcript.
func TestContinueAsNewKeepsTheListComplete(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "can-short"
	run := startTask(t, h, id, map[string]any{"agent": agent("a"), "continueAsNewEvents": 100})
	const turns = 35
	for i := 0; i < turns; i++ {
		require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text(fmt.Sprint("m", i))))
		// Every fifth input goes by update, in the same breath as a signal.
		if i%5 == 4 {
			_, err := sendUpdate(t, id, text(fmt.Sprint("u", i)))
			require.NoError(t, err)
		}
		waitOutputs(t, id, i+1)
	}
	eventually(t, time.Minute, "every input answered", func() bool { return status(t, id).Queued == 0 && status(t, id).State == contract.StateWaiting })
	st := status(t, id)
	require.GreaterOrEqual(t, st.Run, 3)
	all := messages(t, id, nil)
	require.Equal(t, st.Messages, len(all))
	requireSeedOrder(t, all)
	var paged []contract.Message
	for len(paged) < len(all) {
		p := messages(t, id, map[string]any{"after": len(paged), "limit": 7})
		require.NotEmpty(t, p)
		paged = append(paged, p...)
	}
	require.Equal(t, all, paged)
	inputs := 0
	for _, m := range all {
		if m.Type == contract.TypeInput {
			inputs++
		}
	}
	require.Equal(t, turns+turns/5, inputs, "no input lost across runs")
	recordHistory(t, id, run.GetRunID(), "continue-as-new-first-run")
	recordHistory(t, id, "", "continue-as-new-latest-run") // starts from a carry
}

// A turn costs the engine's floor: 10 events for a signal and one activity,
// idle timeout on, no timers or upserts per turn.
func TestTurnCostsTenEvents(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "ten-events"
	run := startTask(t, h, id, map[string]any{"agent": agent("a"), "idleTimeout": "1h"})
	// A run's first workflow task records the version of its rules (a
	// marker and its search attribute): once per run, not per turn.
	eventually(t, time.Minute, "the first workflow task", func() bool {
		for _, e := range history(t, id, run.GetRunID()) {
			if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
				return true
			}
		}
		return false
	})
	const turns = 8
	for i := 1; i <= turns; i++ {
		require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("turn")))
		waitOutputs(t, id, i)
	}
	eventually(t, time.Minute, "the last workflow task to complete", func() bool {
		ev := history(t, id, run.GetRunID())
		return ev[len(ev)-1].GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
	})
	events := withoutTimedOutWorkflowTasks(history(t, id, run.GetRunID()))
	var signals []int
	for i, e := range events {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED {
			signals = append(signals, i)
		}
	}
	require.Len(t, signals, turns)
	for k := 0; k+1 < len(signals); k++ {
		require.Equal(t, 10, signals[k+1]-signals[k], "turn %d", k+1)
	}
	require.Equal(t, 10, len(events)-signals[len(signals)-1], "the last turn")
	markers := 0
	for _, e := range events {
		if e.GetEventType() == enumspb.EVENT_TYPE_MARKER_RECORDED {
			markers++
		}
	}
	require.Equal(t, 1, markers, "the rules version is recorded once per run")
}

// withoutTimedOutWorkflowTasks drops the events of workflow tasks that timed
// out (scheduled, started, timed out): the server adds them when a loaded
// machine's worker misses a workflow task's deadline, which is the
// machine's doing, not the task's.
func withoutTimedOutWorkflowTasks(events []*historypb.HistoryEvent) []*historypb.HistoryEvent {
	drop := map[int64]bool{}
	for _, e := range events {
		if a := e.GetWorkflowTaskTimedOutEventAttributes(); a != nil {
			drop[e.GetEventId()], drop[a.GetScheduledEventId()], drop[a.GetStartedEventId()] = true, true, true
		}
	}
	out := events[:0:0]
	for _, e := range events {
		if !drop[e.GetEventId()] {
			out = append(out, e)
		}
	}
	return out
}
