package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agenttask/agenttask/internal/testmodel"
)

// A task with a 115 KB agent spec, 240 KB of variables and 190 KB of
// collected values continues as new when due (it was postponed for good
// before: its state never fit the 400 KiB carry). The spec is stored once and calls carry its
// reference; the next run starts from a reference to its state. No event
// of the new run carries more than a stash part, and the model still gets
// the whole instructions with the variables filled.
func TestLargeStateContinuesAsNewByReference(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "large-state-by-reference"
	vars := map[string]any{}
	for i := range 60 {
		vars[fmt.Sprintf("v%02d", i)] = strings.Repeat(string(rune('a'+i%26)), 4000) // 60 × 4 KB: 240 KB
	}
	instructions := "BEGIN {{v01}} " + strings.Repeat("Follow the house rules. ", 4_800) + " END-OF-RULES"
	collected := map[string]any{}
	for i := range 100 {
		collected[fmt.Sprintf("c%03d", i)] = strings.Repeat("k", 1_900) // 100 × 1.9 KB: 190 KB
	}
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		sys := c.Messages[0].Content
		if !strings.HasPrefix(sys, "BEGIN "+strings.Repeat("b", 4000)) || !strings.Contains(sys, "END-OF-RULES") {
			return testmodel.Reply{Text: fmt.Sprintf("INSTRUCTIONS MISSING: %d bytes: %.80q ... %.80q", len(sys), sys, sys[max(0, len(sys)-80):])}
		}
		return testmodel.Reply{Text: "ok " + c.Messages[len(c.Messages)-1].Content}
	})
	ag := agent("a")
	ag["instructions"] = instructions
	startTask(t, h, id, map[string]any{"agent": ag, "continueAsNewEvents": 100, "variables": vars, "collected": collected, "input": text("turn start")})
	waitOutputs(t, id, 1)
	for i := 0; status(t, id).Run == 1; i++ {
		require.Less(t, i, 30, "no continue-as-new after %d more turns", i)
		_, err := sendUpdate(t, id, text(fmt.Sprint("turn ", i)))
		require.NoError(t, err)
		waitOutputs(t, id, i+2)
	}
	st := status(t, id)
	require.Nil(t, st.Error)
	// A turn on the new run: it reads its state back, then answers.
	_, err := sendUpdate(t, id, text("after"))
	require.NoError(t, err)
	st = waitOutputs(t, id, st.Outputs+1)
	require.Nil(t, st.Error)
	msgs := messages(t, id, nil)
	last := msgs[len(msgs)-1]
	require.Equal(t, "ok after", *last.Message[0].Text, "the new run's model saw the whole instructions, variables filled")
	require.Equal(t, 2*st.Outputs, len(msgs), "every input and output is listed once")

	// The new run's start argument is a reference; no event carries more
	// than a stash part, and model calls carry no spec.
	events := history(t, id, "")
	start := events[0].GetWorkflowExecutionStartedEventAttributes()
	in := start.GetInput().GetPayloads()[0].GetData()
	require.Less(t, len(in), 4<<10, "the continued run starts from a reference: %.200s", in)
	require.Contains(t, string(in), `"carryRef"`)
	reads := 0
	for _, e := range events {
		if e.GetEventType() != enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
			continue
		}
		a := e.GetActivityTaskScheduledEventAttributes()
		size := payloadsSize(a.GetInput().GetPayloads())
		require.Less(t, size, 300<<10, "%s carries %d bytes", a.GetActivityType().GetName(), size)
		if a.GetActivityType().GetName() == "ModelTurn" {
			require.Less(t, size, 16<<10, "a model call carries the spec's reference, not the spec")
		}
		if a.GetActivityType().GetName() == "StashGet" {
			reads++
		}
	}
	require.GreaterOrEqual(t, reads, 4, "the state (over 500 KB) was read back in parts")
	for _, e := range events {
		if r := e.GetActivityTaskCompletedEventAttributes(); r != nil {
			require.Less(t, payloadsSize(r.GetResult().GetPayloads()), 300<<10)
		}
	}
	recordHistory(t, id, "", "large-state-by-reference")
}

func payloadsSize(ps []*commonpb.Payload) int {
	n := 0
	for _, p := range ps {
		n += len(p.GetData())
	}
	return n
}
