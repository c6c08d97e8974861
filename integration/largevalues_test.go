package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/internal/transcript"
)

// A task saves a 20 KB value and exposes a 10 KB one: both are kept whole
// in the task's stash, by reference. The shaping pass is shown them whole,
// already_collected in a later request shows them cut, the history holds no
// copy of the saved value, and the result's records hold previews and
// references by which the whole values are read. A save of 300 KB is
// refused to the model, naming the limit.
func TestLargeSavedValuesByReference(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "large-values"
	big := strings.Repeat("twenty kilobytes of saved text, kept whole; ", 466)[:20_000]
	report := strings.Repeat("ten kilobytes of an exposed report; ", 300)[:10_000]
	huge := strings.Repeat("three hundred kilobytes; ", 12_000)[:300_000]
	bigArgs, _ := json.Marshal(map[string]any{"name": "big", "value": big})
	hugeArgs, _ := json.Marshal(map[string]any{"name": "huge", "value": huge})
	answer, _ := json.Marshal(map[string]any{"message": "done", "report": report})

	var mu sync.Mutex
	agentCalls := 0
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if strings.Contains(c.Messages[0].Content, "prepare a task's result") {
			return testmodel.Reply{Text: `{"ok":true}`}
		}
		mu.Lock()
		agentCalls++
		n := agentCalls
		mu.Unlock()
		if n == 1 {
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{
				{ID: "s1", Name: "save", Arguments: string(bigArgs)},
				{ID: "s2", Name: "save", Arguments: string(hugeArgs)},
			}}
		}
		return testmodel.Reply{Text: string(answer)}
	})
	spec := agent("saver")
	spec["exposes"] = map[string]any{"type": "object", "properties": map[string]any{"report": map[string]any{"type": "string"}}}
	run := startTask(t, h, id, map[string]any{"agent": spec, "input": text("collect"),
		"output": map[string]any{"instructions": "Report what was saved.", "model": "test/shaper"}})
	waitOutputs(t, id, 1)
	_, err := sendUpdate(t, id, text("and then?"))
	require.NoError(t, err)
	waitOutputs(t, id, 2)
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	var res contract.Result
	require.NoError(t, run.Get(ctxT(t, 60*time.Second), &res))

	var agentReqs, shapeReqs []testmodel.Call
	for _, c := range h.model.Calls() {
		if strings.Contains(c.Messages[0].Content, "prepare a task's result") {
			shapeReqs = append(shapeReqs, c)
		} else {
			agentReqs = append(agentReqs, c)
		}
	}
	require.Len(t, agentReqs, 3, "save calls, the answer, the second turn")

	// The model reads what became of its saves.
	var tools []string
	for _, m := range agentReqs[1].Messages {
		if m.Role == "tool" {
			tools = append(tools, m.Content)
		}
	}
	require.Equal(t, []string{"saved big (20002 bytes, kept whole)",
		"error: the value is 300002 bytes; one value holds at most 262144 bytes (256 KiB): summarise it, or save parts under several names"}, tools)

	// already_collected in the second turn shows both values, cut.
	recall := recalled(t, agentReqs[2])
	require.Len(t, recall, 2)
	for _, r := range recall {
		require.LessOrEqual(t, len([]rune(r.Value)), 120, r.Name)
		require.True(t, strings.HasSuffix(r.Value, "…"), r.Name)
	}
	require.Equal(t, "big", recall[0].Name)
	require.True(t, strings.HasPrefix(big, strings.TrimSuffix(recall[0].Value, "…")))
	require.Equal(t, "report", recall[1].Name)

	// The shaping pass sees them whole.
	require.Len(t, shapeReqs, 1)
	user := shapeReqs[0].Messages[1].Content
	require.Contains(t, user, big)
	require.Contains(t, user, report)
	require.NotContains(t, user, huge[:1000])

	// The result holds previews and references, and the stash the values.
	require.Len(t, res.Records, 2)
	store, err := transcript.Open(context.Background(), h.transcript)
	require.NoError(t, err)
	defer store.Close()
	key := transcript.Key{TaskID: id, FirstRunID: run.GetRunID()}
	for i, want := range []string{big, report} {
		r := res.Records[i]
		require.NotNil(t, r.Ref, r.Name)
		require.Len(t, []rune(string(r.Value)), 1002, "a cut preview as a JSON string")
		var whole string
		require.NoError(t, store.GetOnce(context.Background(), key, r.Ref.Stash, &whole))
		require.Equal(t, want, whole, r.Name)
		require.Equal(t, len(want)+2, r.Ref.Bytes)
	}
	records, _ := json.Marshal(res.Records)
	t.Logf("records in the result: %d bytes", len(records))
	require.Less(t, len(records), 4_000)

	// No event holds the saved value (or the refused one); the largest
	// events are the outputs, which carry the exposed report whole.
	largest, largestType := 0, ""
	for _, e := range history(t, id, run.GetRunID()) {
		b, _ := e.Marshal()
		require.False(t, bytes.Contains(b, []byte(big[5_000:6_000])), "event %d (%s) holds the saved value", e.GetEventId(), e.GetEventType())
		require.False(t, bytes.Contains(b, []byte(huge[5_000:6_000])), "event %d (%s) holds the refused value", e.GetEventId(), e.GetEventType())
		if len(b) > 4_000 {
			t.Logf("event %d (%s): %d bytes", e.GetEventId(), e.GetEventType(), len(b))
		}
		if len(b) > largest {
			largest, largestType = len(b), e.GetEventType().String()
		}
	}
	t.Logf("largest event: %d bytes (%s)", largest, largestType)
	require.Less(t, largest, 16_000, "no event near the saved value's size")
	recordHistory(t, id, run.GetRunID(), "large-values")
}

// recalled reads already_collected from a model request.
func recalled(t *testing.T, c testmodel.Call) []struct{ Name, Value string } {
	t.Helper()
	for _, m := range c.Messages {
		if !strings.HasPrefix(m.Content, `<untrusted_data label="already_collected">`) {
			continue
		}
		body := strings.SplitN(m.Content, "\n", 3)[1]
		var v struct {
			Already []struct{ Name, Value string } `json:"already_collected"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &v))
		return v.Already
	}
	t.Fatal("no already_collected in the request")
	return nil
}
