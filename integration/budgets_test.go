package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workflows"
)

// Nothing wedges a task (docs/contract.md#limits): the update budget leaves
// room for people, and activity capabilities neither reach the runtime nor
// wait for ever.

// askAsync sends an ask and delivers its outcome on the channel.
type askOutcome struct {
	res contract.AskResult
	err error
}

func askAsync(t *testing.T, id string, in any, out chan<- askOutcome) {
	ctx := ctxT(t, 3*time.Minute)
	go func() {
		h, err := sdk.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: contract.UpdateAsk,
			Args: []any{in}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			out <- askOutcome{err: err}
			return
		}
		var r contract.AskResult
		err = h.Get(ctx, &r)
		out <- askOutcome{r, err}
	}()
}

// Ten asks arrive while a turn waits for a person's approval. Temporal holds
// at most ten updates in flight per workflow: before the bound, the ten
// asks took every slot and the decide that would let the turn go on was
// refused by the server, so the task could never answer. Now asks past
// MaxWaitingAsks are refused at once with ASKS_FULL, decide goes through,
// and the waiting asks are answered by the turn that commits their inputs.
func TestTenAsksDuringAnApprovalLeaveRoomForDecide(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	id := "asks-during-approval"
	startTask(t, h, id, map[string]any{"agent": refundAgent(queue, map[string]any{"approval": "always"}), "input": text("refund A1 10")})
	waitPending(t, id, 1)

	out := make(chan askOutcome, 10)
	for i := range 10 {
		askAsync(t, id, text(fmt.Sprintf("question %d", i)), out)
	}
	refused := 10 - contract.MaxWaitingAsks
	for range refused {
		select {
		case o := <-out:
			require.Error(t, o.err, "an ask past the bound answers at once: refused")
			require.Equal(t, contract.ErrAsksFull, errType(o.err), "%v", o.err)
			require.Contains(t, o.err.Error(), "send the input with the send update")
		case <-time.After(time.Minute):
			t.Fatalf("the asks past the bound of %d were not refused within a minute", contract.MaxWaitingAsks)
		}
	}
	eventually(t, time.Minute, "the waiting asks' inputs queued", func() bool { return status(t, id).Queued == contract.MaxWaitingAsks })

	approvals := approvalsOf(t, id)
	require.Len(t, approvals, 1)
	start := time.Now()
	_, err := decide(t, id, approvals[0].ID, true, "")
	require.NoError(t, err, "decide is admitted while asks wait")
	t.Logf("decide completed in %s with %d asks waiting", time.Since(start), contract.MaxWaitingAsks)

	for range contract.MaxWaitingAsks {
		select {
		case o := <-out:
			require.NoError(t, o.err)
			got := *o.res.Output.Message[0].Text
			require.True(t, strings.HasPrefix(got, "done: "), "%s", got)
			require.Contains(t, got, "also read: question", "the turn committed the asks' inputs with its next call")
		case <-time.After(2 * time.Minute):
			t.Fatal("a waiting ask was not answered within two minutes of the decision")
		}
	}
	st := status(t, id)
	require.Equal(t, 0, st.Queued)
	require.Equal(t, contract.MaxWaitingAsks+1, countInputs(messages(t, id, nil)), "the start input and the five asked")
	recordHistory(t, id, "", "asks-during-approval")
}

func countInputs(ms []contract.Message) int {
	n := 0
	for _, m := range ms {
		if m.Type == contract.TypeInput {
			n++
		}
	}
	return n
}

// An activity capability that names one of the runtime's own activities is
// refused at start: those activities trust the keys they are given, so a
// model could read or write another task's state. (Under rulesBudgets the
// runtime's task queue was refused too; since rulesMCP a capability may run
// on the task's own queue, as on a team's worker hosting the runtime through
// the plugin: integration/plugin_test.go.)
func TestActivityCapabilitiesCannotReachTheRuntime(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	cases := []struct {
		name string
		c    map[string]any
		want string
	}{
		{"StashGet without a queue", map[string]any{"activity": "StashGet"}, `"StashGet" is one of the runtime's own activities`},
		{"WriteEntries on a queue of the caller's", map[string]any{"activity": "WriteEntries", "taskQueue": "payments"}, `"WriteEntries" is one of the runtime's own activities`},
		{"ModelTurn on the queue this task runs on", map[string]any{"activity": "ModelTurn", "taskQueue": h.queue}, `"ModelTurn" is one of the runtime's own activities`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := map[string]any{"name": "peek", "kind": "activity"}
			for k, v := range tc.c {
				c[k] = v
			}
			a := agent("a")
			a["capabilities"] = []any{c}
			run := startTask(t, h, fmt.Sprintf("own-activity-%d", i), map[string]any{"agent": a, "input": text("hello")})
			err := run.Get(ctxT(t, time.Minute), nil)
			require.Equal(t, contract.ErrInvalidInput, errType(err), "%v", err)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, 0, h.model.CallCount(), "refused before any model call")
			if tc.c["taskQueue"] != h.queue {
				// The starter refuses it too, before starting anything.
				_, _, err := workflows.CheckStartJSON([]byte(jsonOf(map[string]any{"agent": a})))
				require.Error(t, err)
				require.Contains(t, err.Error(), tc.want)
			}
		})
	}
}

// An activity capability on a queue no worker polls (a typo) ends its call
// after startTimeout; the model reads an error naming the activity and the
// queue, and the turn answers. Before, the call waited for ever and the
// turn stayed "working".
func TestActivityCapabilityOnAQueueWithoutWorkerEndsItsCall(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(refundModel)
	queue := fmt.Sprintf("paymnets-typo-%d", queueSeq.Add(1))
	id := "activity-no-worker"
	startTask(t, h, id, map[string]any{"agent": refundAgent(queue, map[string]any{"startTimeout": "2s"}), "input": text("refund A1 10")})
	waitOutputs(t, id, 1)
	got := lastText(t, id)
	require.Contains(t, got, fmt.Sprintf("no worker on task queue %q picked up the activity \"IssueRefund\" within 2s", queue))
	st := status(t, id)
	require.Equal(t, contract.StateWaiting, st.State)
	require.Nil(t, st.Error)
	recordHistory(t, id, "", "activity-no-worker")
}

// A response with twenty tool calls runs sixteen of them; the model reads an
// error for each of the other four.
func TestAtMostSixteenCallsOfOneResponseRun(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	var orders []string
	for i := range 20 {
		orders = append(orders, fmt.Sprintf("refund B%02d 1", i))
	}
	id := "twenty-calls"
	startTask(t, h, id, map[string]any{"agent": refundAgent(queue, nil), "input": text(strings.Join(orders, "; "))})
	waitOutputs(t, id, 1)
	got := lastText(t, id)
	require.Equal(t, 20-contract.MaxCallsPerResponse, strings.Count(got, "at most 16 of one response run"), "%s", got)
	require.Equal(t, contract.MaxCallsPerResponse, activityRuns(t, id, "IssueRefund"))
	// The first sixteen ran in order: the refused ones are the last four.
	for n := contract.MaxCallsPerResponse + 1; n <= 20; n++ {
		require.Contains(t, got, fmt.Sprintf("(number %d)", n))
	}
	recordHistory(t, id, "", "twenty-calls")
}

// An output.model whose provider no worker serves is refused at start with
// OUTPUT_UNAVAILABLE, naming the providers served; before, the task ran and
// its shaping pass failed a day of retries later.
func TestUnservedOutputModelIsRefusedAtStart(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	run := startTask(t, h, "unserved-output-model", map[string]any{"agent": agent("a"), "input": text("hello"),
		"output": map[string]any{"instructions": "Summarise.", "model": "nowhere/shaper"}})
	err := run.Get(ctxT(t, time.Minute), nil)
	require.Equal(t, contract.ErrOutputUnavailable, errType(err), "%v", err)
	require.Contains(t, err.Error(), `does not serve the provider "nowhere" (it serves test)`)
	require.Equal(t, 0, h.model.CallCount(), "refused before any model call")
}

// Malformed inputs the update used to accept: a negative sizeBytes, a
// sizeBytes that is not the text's, a message of 2,000 parts; and history
// text over the inline budget. Each is refused with a corrective error.
func TestMalformedPartsAndHistoryAreRefused(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(echoLast)
	id := "malformed-parts"
	startTask(t, h, id, map[string]any{"agent": agent("a")})
	part := func(s string, size any) map[string]any {
		p := map[string]any{"mimeType": "text/plain", "text": s}
		if size != nil {
			p["sizeBytes"] = size
		}
		return p
	}
	many := make([]any, 2000)
	for i := range many {
		many[i] = part("x", nil)
	}
	for name, tc := range map[string]struct {
		in   map[string]any
		want string
	}{
		"negative sizeBytes":      {map[string]any{"message": []any{part("hi", -5)}}, "message[0].sizeBytes: -5; a size is a non-negative number of bytes"},
		"sizeBytes of other text": {map[string]any{"message": []any{part("hi", 7)}}, "message[0].sizeBytes: 7, but the text is 2 bytes"},
		"2,000 parts":             {map[string]any{"message": many}, "message holds 2000 content parts, more than the 100 one input may hold"},
	} {
		_, err := sendUpdate(t, id, tc.in)
		require.Equal(t, contract.ErrInvalidInput, errType(err), "%s: %v", name, err)
		require.Contains(t, err.Error(), tc.want, name)
	}
	_, err := sendUpdate(t, id, map[string]any{"message": []any{part("hi", 2)}})
	require.NoError(t, err, "the exact size is accepted")
	waitOutputs(t, id, 1)
	require.Equal(t, 1, countInputs(messages(t, id, nil)), "nothing refused was queued")

	run := startTask(t, h, "history-over-budget", map[string]any{"agent": agent("a"),
		"history": []any{map[string]any{"role": "user", "content": strings.Repeat("y", contract.MaxInlineTextBytes+1)}}})
	err = run.Get(ctxT(t, time.Minute), nil)
	require.Equal(t, contract.ErrInvalidInput, errType(err), "%v", err)
	require.Contains(t, err.Error(), "history[0].content: 100001 bytes is over the 100000-byte inline budget")
}

// An ask waiting on a turn that waits for approvals does not hold the run:
// when the run must continue as new, the ask ends with ANSWER_PENDING (its
// input stays and is answered in the next run), and the run continues.
// Before, a waiting ask kept the run from continuing for as long as the
// approval took.
func TestAskWaitingOnAnApprovalEndsWhenTheRunContinues(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	id := "ask-answer-pending"
	startTask(t, h, id, map[string]any{"agent": refundAgent(queue, map[string]any{"approval": "always"}),
		"continueAsNewEvents": 100, "input": text("refund o-1 70")})
	waitPending(t, id, 1)
	out := make(chan askOutcome, 1)
	askAsync(t, id, text("and my other order?"), out)
	eventually(t, time.Minute, "the ask's input queued", func() bool { return status(t, id).Queued == 1 })
	// Inputs sent while waiting grow the history until the run must
	// continue as new.
	for i := 0; status(t, id).Run == 1; i++ {
		require.Less(t, i, 90, "no continue-as-new while an ask waits on the approval")
		require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text(fmt.Sprint("note ", i))))
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case o := <-out:
		require.Equal(t, contract.ErrAnswerPending, errType(o.err), "%v", o.err)
		require.Contains(t, o.err.Error(), "read the answer with the messages query")
	case <-time.After(time.Minute):
		t.Fatal("the ask did not end when the run continued as new")
	}
	waitPending(t, id, 1)
	_, err := decide(t, id, approvalsOf(t, id)[0].ID, true, "")
	require.NoError(t, err)
	waitOutputs(t, id, 1)
	got := lastText(t, id)
	require.Contains(t, got, `"status":"issued"`)
	require.Contains(t, got, "also read: and my other order?", "the ask's input was carried and answered")
	recordHistory(t, id, "", "ask-answer-pending")
}
