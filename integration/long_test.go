package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agenttask/agenttask/contract"
)

const maxPayloadBytes = 512 << 10

// A 2,000-turn conversation of ~1 KB messages, with parts near the
// 100,000-byte inline budget, runs through continue-as-new; the complete
// list reads back in order by pages; no payload in any run exceeds 512 KiB.
func TestLongConversationThroughContinueAsNew(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "long"
	const turns = 2000
	run := startTask(t, h, id, map[string]any{"agent": agent("a")})
	body := strings.Repeat("lorem ipsum ", 85) // ~1 KB
	want := make([]string, turns)
	start := time.Now()
	for i := 0; i < turns; i++ {
		want[i] = fmt.Sprintf("turn %d %s", i, body)
		if i%250 == 125 {
			want[i] = fmt.Sprintf("turn %d %s", i, strings.Repeat("z", contract.MaxInlineTextBytes-20))
		}
		require.NoError(t, sdk.SignalWorkflow(ctxT(t, 10*time.Second), id, "", "input", text(want[i])))
		waitOutputsFast(t, id, i+1)
	}
	t.Logf("%d turns in %s", turns, time.Since(start))
	st := status(t, id)
	require.Greater(t, st.Run, 1, "the conversation continued as new")
	require.Equal(t, 2*turns, st.Messages)

	// Read the complete list by pages.
	var all []contract.Message
	for len(all) < st.Messages {
		page := messages(t, id, map[string]any{"after": len(all), "limit": 300})
		require.NotEmpty(t, page)
		all = append(all, page...)
	}
	require.Len(t, all, 2*turns)
	requireSeedOrder(t, all)
	for i := 0; i < turns; i++ {
		in, out := all[2*i], all[2*i+1]
		require.Equal(t, contract.TypeInput, in.Type)
		require.Equal(t, want[i], joinText(in), "input %d", i)
		require.Equal(t, contract.TypeOutput, out.Type)
		require.Equal(t, "echo: "+want[i], joinText(out), "output %d", i)
	}

	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	var res contract.Result
	require.NoError(t, sdk.GetWorkflow(ctxT(t, time.Minute), id, "").Get(ctxT(t, time.Minute), &res))
	require.Equal(t, turns, res.Turns)

	// Every run of the chain: no event carries more than 512 KiB.
	runs, largest := 0, 0
	for runID := run.GetRunID(); runID != ""; runs++ {
		next := ""
		for _, e := range history(t, id, runID) {
			size := proto.Size(e)
			largest = max(largest, size)
			require.LessOrEqual(t, size, maxPayloadBytes, "run %d event %d (%s)", runs, e.GetEventId(), e.GetEventType())
			if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
				next = e.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
			}
		}
		runID = next
	}
	t.Logf("%d runs; largest event %d bytes", runs, largest)
	require.Equal(t, st.Run, runs)
}

func joinText(m contract.Message) string {
	var b strings.Builder
	for _, p := range m.Message {
		b.WriteString(*p.Text)
	}
	return b.String()
}

// waitOutputsFast polls status tightly: the long test is dominated by waits.
func waitOutputsFast(t *testing.T, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if status(t, id).Outputs >= n {
			return
		}
		if time.Now().After(deadline) {
			dumpTail(t, id)
			t.Fatalf("turn %d: no output within 30s", n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// dumpTail logs the last events of the task's current run, to show why it is stuck.
func dumpTail(t *testing.T, id string) {
	events := history(t, id, "")
	for _, e := range events[max(0, len(events)-12):] {
		t.Logf("event %d %s %.600v", e.GetEventId(), e.GetEventType(), e.GetAttributes())
	}
}
