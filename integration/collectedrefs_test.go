package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/internal/transcript"
	"github.com/agenttask/agenttask/starter"
)

// No collected value is cut (rules version 9): a capability's 12 KB result
// and an 8 KB value of the start argument's collected are kept whole in the
// task's stash by reference, and the shaping pass is shown them whole. A
// resumed task copies both into its own stash, without either entering its
// history, and its shaping pass sees them whole too.
func TestCollectedValuesAreKeptWholeAcrossResume(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	research := strings.Repeat("twelve kilobytes of research, every word kept; ", 260)[:12_000]
	notes := strings.Repeat("eight kilobytes of notes from the caller; ", 200)[:8_000]
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		last := c.Messages[len(c.Messages)-1]
		switch {
		case strings.Contains(c.Messages[0].Content, "prepare a task's result"):
			return testmodel.Reply{Text: `{"ok":true}`}
		case c.Model == "child":
			return testmodel.Reply{Text: research}
		case last.Role == "tool":
			return testmodel.Reply{Text: "done"}
		case strings.Contains(last.Content, "again"):
			return testmodel.Reply{Text: "still done"}
		default:
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "c1", Name: "research", Arguments: `{"message":"look it up"}`}}}
		}
	})
	spec := agent("boss")
	spec["capabilities"] = []any{map[string]any{"name": "research", "kind": "delegate", "agent": map[string]any{"name": "researcher", "model": "test/child"}}}
	id := "collected-whole"
	run := startTask(t, h, id, map[string]any{"agent": spec, "input": text("find out"),
		"collected": map[string]any{"notes": notes},
		"output":    map[string]any{"instructions": "Report what was found.", "model": "test/shaper"}})
	waitOutputs(t, id, 1)
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	var res contract.Result
	require.NoError(t, run.Get(ctxT(t, time.Minute), &res))

	store, err := transcript.Open(context.Background(), h.transcript)
	require.NoError(t, err)
	defer store.Close()
	requireWholeByRef := func(taskID, firstRunID string, got []contract.Collected) {
		t.Helper()
		byName := map[string]contract.Collected{}
		for _, c := range got {
			byName[c.Name] = c
		}
		for name, want := range map[string]string{"notes": notes, "research": research} {
			c, ok := byName[name]
			require.True(t, ok, "%s collected", name)
			require.NotNil(t, c.Ref, "%s kept by reference", name)
			require.Len(t, []rune(string(c.Value)), 1002, "%s: a cut preview as a JSON string", name)
			var whole string
			require.NoError(t, store.GetOnce(context.Background(), transcript.Key{TaskID: taskID, FirstRunID: firstRunID}, c.Ref.Stash, &whole))
			require.Equal(t, want, whole, "%s whole in %s's stash", name, taskID)
		}
	}
	requireWholeByRef(id, run.GetRunID(), res.Records)
	shaped := func(n int) string {
		var shapes []testmodel.Call
		for _, c := range h.model.Calls() {
			if strings.Contains(c.Messages[0].Content, "prepare a task's result") {
				shapes = append(shapes, c)
			}
		}
		require.Len(t, shapes, n)
		return shapes[n-1].Messages[1].Content
	}
	user := shaped(1)
	require.Contains(t, user, research, "the shaping pass sees the capability's result whole")
	require.Contains(t, user, notes, "and the start argument's value")

	// Resumed: both values are copied into the new task's own stash.
	newID, err := h.tasks.Resume(ctxT(t, 30*time.Second), id, textIO("again"), starter.StartOptions{TaskID: "collected-whole-resumed"})
	require.NoError(t, err)
	waitOutputs(t, newID, 1) // its own outputs
	v, err := sdk.QueryWorkflow(ctxT(t, 10*time.Second), newID, "", contract.QueryCollected)
	require.NoError(t, err)
	var got []contract.Collected
	require.NoError(t, v.Get(&got))
	d, err := sdk.DescribeWorkflowExecution(ctxT(t, 10*time.Second), newID, "")
	require.NoError(t, err)
	firstRun := d.GetWorkflowExecutionInfo().GetFirstRunId()
	requireWholeByRef(newID, firstRun, got)
	for _, e := range history(t, newID, "") {
		b, _ := e.Marshal()
		require.False(t, bytes.Contains(b, []byte(research[5_000:6_000])), "event %d (%s) of the resumed task holds the value", e.GetEventId(), e.GetEventType())
	}
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), newID, "", "close", nil))
	var res2 contract.Result
	require.NoError(t, sdk.GetWorkflow(ctxT(t, time.Minute), newID, "").Get(ctxT(t, time.Minute), &res2))
	user = shaped(2)
	require.Contains(t, user, research, "the resumed task's shaping pass sees the value whole")
	require.Contains(t, user, notes)
	recordHistory(t, id, run.GetRunID(), "collected-by-ref")
	recordHistory(t, newID, "", "collected-by-ref-resumed")
}
