package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/cleanup"
	"github.com/agenttask/agenttask/internal/retained"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/internal/transcript"
)

// A conversation fed by an automated producer receives an input during
// every turn, so its queue is never empty between turns. It still
// continues as new on time: every run's history stays within twice the
// configured threshold (continueAsNewEvents 100), for 300 turns, and no
// input is lost across the runs.
func TestBusyConversationContinuesAsNewOnTime(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "busy-conversation"
	const turns, threshold = 300, 100
	var sent atomic.Int64
	// Every model call (a turn in flight) sends the next input before it
	// answers: the input arrives during the turn.
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if n := sent.Add(1); n < turns {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := sdk.SignalWorkflow(ctx, id, "", "input", text(fmt.Sprint("m", n))); err != nil {
				t.Errorf("input %d: %v", n, err)
			}
		}
		return testmodel.Echo(c)
	})
	run := startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("m0"), "continueAsNewEvents": threshold})

	eventually(t, 5*time.Minute, fmt.Sprintf("%d turns answered", turns), func() bool {
		st := status(t, id)
		return int(sent.Load()) >= turns && st.Queued == 0 && st.State == contract.StateWaiting
	})

	// Follow the chain of runs from the first: each one's history is
	// bounded, and each but the last continued as new.
	runs, longest := 0, 0
	for runID := run.GetRunID(); runID != ""; runs++ {
		events := history(t, id, runID)
		longest = max(longest, len(events))
		require.LessOrEqual(t, len(events), 2*threshold, "run %d (%s) grew to %d events", runs+1, runID, len(events))
		last := events[len(events)-1]
		runID = ""
		if last.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
			runID = last.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
		}
	}
	t.Logf("%d turns in %d runs, the longest %d events", turns, runs, longest)
	require.GreaterOrEqual(t, runs, turns*10/(2*threshold), "the conversation continued as new along the way")

	all := messages(t, id, nil)
	requireSeedOrder(t, all)
	inputs := 0
	for _, m := range all {
		if m.Type == contract.TypeInput {
			require.Equal(t, fmt.Sprint("m", inputs), joinText(m), "every input, once, in order")
			inputs++
		}
	}
	require.Equal(t, turns, inputs, "no input lost across runs")
	require.GreaterOrEqual(t, h.model.CallCount(), turns/2, "inputs arriving during a turn commit together at the next")
	recordHistory(t, id, "", "busy-conversation-latest-run") // started from a carry that holds a queue
	require.NoError(t, sdkSignalClose(t, id))
}

func sdkSignalClose(t *testing.T, id string) error {
	return sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil)
}

// With retention off nothing seals a task's transcript after it ends: the
// workflow writes its last output's stamp itself when it ends (rules 14),
// so the transcript alone (what `messages` reads once Temporal's retention
// removed the execution) holds the final answer.
func TestTheFinalAnswerIsInTheTranscriptWhenTheTaskEnds(t *testing.T) {
	h := newHarness(t)
	h.model.SetHandler(echoLast)
	cfg := h.workerConfig()
	cfg.Retention = cleanup.RetentionOff
	h.runWorker(cfg)
	id := "final-answer-sealed"
	startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("first")})
	waitOutputs(t, id, 1)
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("second")))
	waitOutputs(t, id, 2)
	closeAndWait(t, id)
	live := messages(t, id, nil)
	require.Len(t, live, 4)

	store, err := transcript.Open(ctxT(t, 10*time.Second), h.transcript)
	require.NoError(t, err)
	defer store.Close()
	stored, err := retained.Messages(ctxT(t, 10*time.Second), store, id, nil)
	require.NoError(t, err)
	require.Equal(t, jsonOf(live), jsonOf(stored), "the transcript alone lists the whole conversation, the final answer with its committed_at")
	require.Equal(t, "echo: second", texts(stored)[3])
	require.NotEmpty(t, stored[3].CommittedAt)
}
