package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/starter"
)

// echoLast answers every call with the last message it was sent.
func echoLast(c testmodel.Call) testmodel.Reply {
	return testmodel.Reply{Text: "echo: " + c.Messages[len(c.Messages)-1].Content}
}

func textIO(s string) contract.TaskIO {
	return contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(s)}}
}

// texts is the first text of each message.
func texts(ms []contract.Message) []string {
	var out []string
	for _, m := range ms {
		s := ""
		for _, p := range m.Message {
			if p.Text != nil {
				s = *p.Text
				break
			}
		}
		out = append(out, s)
	}
	return out
}

// closeAndWait closes a conversation and waits for it to complete.
func closeAndWait(t *testing.T, id string) {
	t.Helper()
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	require.NoError(t, sdk.GetWorkflow(ctxT(t, 30*time.Second), id, "").Get(ctxT(t, 30*time.Second), nil))
}

// Two rescues of one failed task, two resumes of one completed task and a
// resume of a resumed task each answer their next input, and each keeps a
// conversation of its own: every continuation writes its own transcript.
func TestContinuationsNeverCollide(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(echoLast)

	// Two resumes of one completed task.
	startTask(t, h, "cont-done", map[string]any{"agent": agent("a"), "input": text("q1")})
	waitOutputs(t, "cont-done", 1)
	closeAndWait(t, "cont-done")
	for _, n := range []string{"1", "2"} {
		id, err := h.tasks.Resume(ctxT(t, 30*time.Second), "cont-done", textIO("resume "+n), starter.StartOptions{TaskID: "cont-resumed-" + n})
		require.NoError(t, err)
		waitOutputs(t, id, 1) // its own outputs
	}
	for _, n := range []string{"1", "2"} {
		msgs := messages(t, "cont-resumed-"+n, nil)
		require.Equal(t, []string{"q1", "echo: q1", "resume " + n, "echo: resume " + n}, texts(msgs), "resume %s", n)
		requireSeedOrder(t, msgs)
	}
	// A resume of a resumed task reads through both.
	closeAndWait(t, "cont-resumed-1")
	id, err := h.tasks.Resume(ctxT(t, 30*time.Second), "cont-resumed-1", textIO("again"), starter.StartOptions{TaskID: "cont-resumed-1-1"})
	require.NoError(t, err)
	waitOutputs(t, id, 1)
	msgs := messages(t, id, nil)
	require.Equal(t, []string{"q1", "echo: q1", "resume 1", "echo: resume 1", "again", "echo: again"}, texts(msgs))
	requireSeedOrder(t, msgs)
	last := h.model.Calls()[h.model.CallCount()-1]
	var seen []string
	for _, m := range last.Messages[1:] { // after the instructions
		seen = append(seen, m.Content)
	}
	require.Equal(t, []string{"q1", "echo: q1", "resume 1", "echo: resume 1", "again"}, seen, "the model sees the whole chain")
	// Its follow-ups land too.
	_, err = sendUpdate(t, id, text("and more"))
	require.NoError(t, err)
	waitOutputs(t, id, 2)
	require.Equal(t, "echo: and more", texts(messages(t, id, nil))[7])

	// Two rescues of one terminated task.
	startTask(t, h, "cont-failed", map[string]any{"agent": agent("a"), "input": text("f1")})
	waitOutputs(t, "cont-failed", 1)
	require.NoError(t, sdk.TerminateWorkflow(ctxT(t, 5*time.Second), "cont-failed", "", "an outage"))
	for _, n := range []string{"1", "2"} {
		in := textIO("rescue " + n)
		id, err := h.tasks.Rescue(ctxT(t, 30*time.Second), "cont-failed", &in, starter.StartOptions{TaskID: "cont-rescued-" + n})
		require.NoError(t, err)
		waitOutputs(t, id, 1)
		require.Equal(t, []string{"f1", "echo: f1", "rescue " + n, "echo: rescue " + n}, texts(messages(t, id, nil)))
	}
	closeAndWait(t, "cont-rescued-2")
	recordHistory(t, "cont-rescued-2", "", "rescued-twice")
}

// A task whose first run's history is gone (deleted, as retention would)
// can still be rescued: what it needs is read from its latest run.
func TestRescueAfterTheFirstRunIsDeleted(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(echoLast)
	id := "cont-retained"
	spec := agent("a")
	spec["instructions"] = "Answer briefly. Key: {{api_key}}"
	first := startTask(t, h, id, map[string]any{"agent": spec, "continueAsNewEvents": 100,
		"variables": map[string]any{"api_key": "s3cr3t"}, "secrets": []string{"api_key"}})
	for i := 0; i == 0 || status(t, id).Run < 2; i++ {
		require.Less(t, i, 40, "the task never continued as new")
		_, err := sendUpdate(t, id, text(fmt.Sprint("m", i)))
		if err != nil {
			require.NoError(t, err, "%v", first.Get(ctxT(t, 5*time.Second), nil))
		}
		waitOutputs(t, id, i+1)
	}
	before := status(t, id)
	require.NoError(t, sdk.TerminateWorkflow(ctxT(t, 5*time.Second), id, "", "an outage"))
	_, err := sdk.WorkflowService().DeleteWorkflowExecution(ctxT(t, 10*time.Second), &workflowservice.DeleteWorkflowExecutionRequest{
		Namespace: temporalNS, WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: first.GetRunID()}})
	require.NoError(t, err)
	eventually(t, 90*time.Second, "the first run's history deleted", func() bool {
		_, err := sdk.DescribeWorkflowExecution(context.Background(), id, first.GetRunID())
		var nf *serviceerror.NotFound
		return errors.As(err, &nf)
	})
	_, err = sdk.GetWorkflowHistory(context.Background(), id, first.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT).Next()
	require.Error(t, err, "the first run's history is gone")

	// Its secret was never written again: the rescue asks for it.
	in := textIO("after the outage")
	_, err = h.tasks.Rescue(ctxT(t, 30*time.Second), id, &in, starter.StartOptions{TaskID: "cont-retained-2"})
	require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err), "%v", err)
	require.Contains(t, err.Error(), "api_key")

	newID, err := h.tasks.Rescue(ctxT(t, 30*time.Second), id, &in, starter.StartOptions{TaskID: "cont-retained-2",
		Variables: map[string]json.RawMessage{"api_key": json.RawMessage(`"s3cr3t"`)}})
	require.NoError(t, err)
	waitOutputs(t, newID, 1)
	msgs := messages(t, newID, nil)
	require.Len(t, msgs, before.Messages+2, "every earlier entry, then the rescue's input and its answer")
	require.Equal(t, []string{"after the outage", "echo: after the outage"}, texts(msgs[before.Messages:]))
	require.Equal(t, "m0", texts(msgs)[0])
	requireSeedOrder(t, msgs)
}

// A resumed task copies the files of the conversation it continues into its
// own space and shows them to the model from there; no request names an
// object outside its space. A file gone before the resume is described, not
// forwarded.
func TestResumeCarriesFilesIntoItsOwnSpace(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	m := h.mountSpec("files")
	dir := strings.TrimPrefix(m.URL, "file://")
	spec := agent("viewer")
	spec["mount"] = m
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: `{"message":"seen","attachments":[]}`}
	})
	cat := upload(t, m, "files-old", "cat.png", "image/png", pngBytes)
	gone := upload(t, m, "files-old", "gone.png", "image/png", append([]byte("gone"), pngBytes...))
	startTask(t, h, "files-old", map[string]any{"agent": spec,
		"input": map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "look"}, partMap(cat), partMap(gone)}}})
	waitOutputs(t, "files-old", 1)
	closeAndWait(t, "files-old")
	oldSpace := filepath.Join(dir, "tasks", "files-old", "files")
	require.NoError(t, os.Remove(filepath.Join(oldSpace, "gone.png")))

	dog := append([]byte("dog"), pngBytes...)
	mine := upload(t, m, "files-new", "dog.png", "image/png", dog)
	newID, err := h.tasks.Resume(ctxT(t, 30*time.Second), "files-old", contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("and this?"), mine}}, starter.StartOptions{TaskID: "files-new"})
	require.NoError(t, err)
	waitOutputs(t, newID, 1)
	copied, err := os.ReadFile(filepath.Join(dir, "tasks", "files-new", "files", "cat.png"))
	require.NoError(t, err, "the earlier file is copied into the new task's space")
	require.Equal(t, pngBytes, copied)

	// The earlier task's copy is gone now: the next turn still shows the image, from the new space.
	require.NoError(t, os.Remove(filepath.Join(oldSpace, "cat.png")))
	_, err = sendUpdate(t, newID, text("once more"))
	require.NoError(t, err)
	waitOutputs(t, newID, 2)
	last := h.model.Calls()[h.model.CallCount()-1]
	var images []string
	var all strings.Builder
	for _, msg := range last.Messages {
		images = append(images, msg.Images...)
		all.WriteString(msg.Content)
	}
	require.Equal(t, []string{dataURLOf("image/png", pngBytes), dataURLOf("image/png", dog)}, images, "the earlier image, read from the new space, then the new task's own")
	require.Contains(t, all.String(), "gone.png: a file of the conversation this task continues; it could not be copied")
	for _, c := range h.model.Calls() {
		if strings.Contains(string(c.Raw), "and this?") {
			require.NotContains(t, string(c.Raw), "files-old", "no request of the new task names the old task's space")
		}
	}
	closeAndWait(t, newID)
	recordHistory(t, newID, "", "resumed-with-files")
}

func dataURLOf(mime string, b []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b)
}
