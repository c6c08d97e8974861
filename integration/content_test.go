package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/starter"
)

// pngBytes is a small image (content does not matter to the runtime).
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 3000)...)

// mountSpec is a mount of the harness's workers, by URL (as tasks started
// before mount names existed give it).
func (h *harness) mountSpec(name string) contract.MountSpec {
	return contract.MountSpec{Root: "task", URL: h.mounts[name]}
}

func upload(t *testing.T, m contract.MountSpec, taskID, path, mime string, data []byte) contract.ContentPart {
	t.Helper()
	part, err := starter.Upload(context.Background(), m, taskID, path, mime, bytes.NewReader(data))
	require.NoError(t, err)
	return part
}

func partMap(p contract.ContentPart) map[string]any {
	m := map[string]any{"mimeType": p.MimeType}
	if p.File != nil {
		m["file"] = *p.File
	}
	if p.Text != nil {
		m["text"] = *p.Text
	}
	return m
}

// A file is uploaded to the task's mount, sent by reference, checked on
// arrival (size and sha256 recorded), and resolved for the model request
// from the mount; bytes never enter history. A missing file is refused to
// the caller; a file changed after it was referenced fails the request.
func TestFilesTravelByReference(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	m := h.mountSpec("files")
	id := "files"
	spec := agent("looker")
	spec["mount"] = m
	run := startTask(t, h, id, map[string]any{"agent": spec})
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: `{"message":"I see it","attachments":[]}`}
	})

	part := upload(t, m, id, "cat.png", "image/png", pngBytes)
	res, err := sendUpdate(t, id, map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "what is this?"}, partMap(part)}})
	require.NoError(t, err)
	mustTime(t, res.ReceivedAt)
	waitOutputs(t, id, 1)
	call := h.model.Calls()[0]
	last := call.Messages[len(call.Messages)-1]
	require.Equal(t, []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)}, last.Images)

	msgs := messages(t, id, nil)
	got := msgs[0].Message[1]
	require.Equal(t, int64(len(pngBytes)), *got.SizeBytes, "the runtime records the size")
	require.Contains(t, string(got.Metadata), `"sha256"`)

	// Missing: refused to the caller, nothing queued.
	_, err = sendUpdate(t, id, map[string]any{"message": []any{map[string]any{"mimeType": "image/png", "file": "task://nope.png"}}})
	require.Equal(t, "FILE_NOT_FOUND", errType(err), "%v", err)
	// A reference out of the space is refused before anything runs.
	_, err = sendUpdate(t, id, map[string]any{"message": []any{map[string]any{"mimeType": "image/png", "file": "task://../other/cat.png"}}})
	require.Equal(t, contract.ErrInvalidInput, errType(err), "%v", err)
	require.Equal(t, 2, len(messages(t, id, nil)))

	// No history payload carries the file's bytes.
	for _, e := range history(t, id, run.GetRunID()) {
		b, _ := e.Marshal()
		require.False(t, bytes.Contains(b, pngBytes[:64]), "event %d carries file bytes", e.GetEventId())
	}

	// Changed after it was referenced: the next request fails with FILE_CHANGED.
	time.Sleep(10 * time.Millisecond)
	upload(t, m, id, "cat.png", "image/png", append(pngBytes, 1))
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("and now?")))
	err = run.Get(ctxT(t, 30*time.Second), nil)
	require.Equal(t, "FILE_CHANGED", errType(err), "%v", err)
	recordHistory(t, id, run.GetRunID(), "files-checked-then-changed")
}

// The seed's three CEL examples, verbatim, as guardrails of real tasks.
func TestSeedGuardrailExamples(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	m := h.mountSpec("files")
	cases := []struct {
		name, expr string
		ok, bad    func(id string) map[string]any
	}{
		{"under 15 MB", `size(i) > 0 && i[0].sizeBytes < 15000000`,
			func(id string) map[string]any {
				return map[string]any{"message": []any{partMap(upload(t, m, id, "small.bin", "application/octet-stream", make([]byte, 1000)))}}
			},
			func(id string) map[string]any {
				return map[string]any{"message": []any{partMap(upload(t, m, id, "big.bin", "application/octet-stream", make([]byte, 15_000_000)))}}
			}},
		{"only images", `size(i) > 0 && i[0].mimeType.startsWith("image/")`,
			func(id string) map[string]any {
				return map[string]any{"message": []any{partMap(upload(t, m, id, "a.png", "image/png", pngBytes))}}
			},
			func(id string) map[string]any { return text("just text") }},
		{"requires a file", `size(i) > 0 && has(i[0].file)`,
			func(id string) map[string]any {
				return map[string]any{"message": []any{partMap(upload(t, m, id, "doc.pdf", "application/pdf", []byte("%PDF-1.4")))}}
			},
			func(id string) map[string]any { return text("no file here") }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := "guard-" + string(rune('a'+i))
			spec := agent("guarded")
			spec["mount"] = m
			spec["guardrails"] = []any{map[string]any{"name": "rule", "expression": tc.expr, "message": "refused by " + tc.name}}
			h.model.SetHandler(func(testmodel.Call) testmodel.Reply {
				return testmodel.Reply{Text: `{"message":"ok","attachments":[]}`}
			})
			startTask(t, h, id, map[string]any{"agent": spec})
			_, err := sendUpdate(t, id, tc.ok(id))
			require.NoError(t, err)
			_, err = sendUpdate(t, id, tc.bad(id))
			require.Equal(t, "GUARDRAIL", errType(err), "%v", err)
			require.Contains(t, err.Error(), "refused by "+tc.name)
			// By signal: recorded, nothing else changes.
			require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", tc.bad(id)))
			eventually(t, time.Minute, "the rejection", func() bool { return status(t, id).Rejected == 1 })
			require.Equal(t, "GUARDRAIL", status(t, id).LastRejection.Type)
		})
	}
}

// A parent delegates to a child agent (a real child run against the test
// model) whose output carries an image; the parent's next model request
// shows the image, read from the parent's own mount.
func TestDelegateRoutesFilesBothWays(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	parentMount, childMount := h.mountSpec("files"), h.mountSpec("other")
	child := map[string]any{"name": "painter", "model": "test/child", "mount": childMount}
	parent := map[string]any{"name": "boss", "model": "test/parent", "mount": parentMount,
		"capabilities": []any{map[string]any{"name": "paint", "kind": "delegate", "agent": child,
			"condition": `size(i) > 0 && i[0].mimeType.startsWith("text/")`}}}
	childGo := make(chan struct{}) // closed once an input has arrived while the sub-task runs
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		switch {
		case c.Model == "child":
			select {
			case <-childGo:
			case <-time.After(time.Minute):
			}
			return testmodel.Reply{Text: `{"message":"here is your picture","attachments":["task://cat.png"]}`}
		case hasToolResult(c):
			return testmodel.Reply{Text: `{"message":"done: the picture is back","attachments":[]}`}
		default:
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "call_1", Name: "paint", Arguments: `{"message":"paint this again","files":["task://cat.png"]}`}}}
		}
	})
	id := "boss"
	part := upload(t, parentMount, id, "cat.png", "image/png", pngBytes)
	run := startTask(t, h, id, map[string]any{"agent": parent,
		"input": map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "get this painted"}, partMap(part)}}})
	// While the sub-task runs, another input arrives: the call after the
	// capability commits it (docs/content.md#in-the-turn-loop), in the same
	// turn.
	eventually(t, time.Minute, "the sub-task to start", func() bool {
		_, err := sdk.DescribeWorkflowExecution(ctxT(t, 5*time.Second), id+".paint.t1.c0", "")
		return err == nil
	})
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("make it blue")))
	eventually(t, time.Minute, "the input queued during the turn", func() bool { return status(t, id).Queued == 1 })
	close(childGo)
	waitOutputs(t, id, 1)
	msgs := messages(t, id, nil)
	require.Equal(t, []string{"input", "input", "output"}, types(msgs), "one turn: both inputs, one answer")
	require.True(t, mustTime(t, msgs[1].CommittedAt).After(mustTime(t, msgs[0].CommittedAt)), "committed at the call after the capability")
	require.Equal(t, 1, status(t, id).Turns)

	calls := h.model.Calls()
	require.GreaterOrEqual(t, len(calls), 3)
	require.Equal(t, []string{"paint"}, calls[0].Tools, "the condition held: the capability was offered")
	var childCall, followUp *testmodel.Call
	for i := range calls {
		if calls[i].Model == "child" {
			childCall = &calls[i]
		} else if i > 0 {
			followUp = &calls[i]
		}
	}
	require.NotNil(t, childCall)
	require.NotNil(t, followUp)
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	require.Equal(t, want, childCall.Messages[len(childCall.Messages)-1].Images[0], "the child read its own copy")
	var toolMsg, fileMsg *testmodel.Message
	for i, m := range followUp.Messages {
		if m.Role == "tool" {
			toolMsg, fileMsg = &followUp.Messages[i], &followUp.Messages[i+1]
		}
	}
	require.NotNil(t, toolMsg)
	require.Equal(t, "make it blue", followUp.Messages[len(followUp.Messages)-1].Content, "the queued input follows the capability exchange")
	require.Equal(t, "call_1", toolMsg.ToolCallID)
	require.Contains(t, toolMsg.Content, "here is your picture")
	require.Equal(t, []string{want}, fileMsg.Images, "the parent's request shows the image")
	require.Contains(t, fileMsg.Content, "task://from-paint-")

	// The image is in the parent's own mount, and the child's run is a real task.
	parentDir := strings.TrimPrefix(parentMount.URL, "file://")
	var found []string
	_ = filepath.Walk(parentDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && filepath.Base(p) == "cat.png" {
			found = append(found, p)
		}
		return nil
	})
	require.Len(t, found, 2, "the original and the copy that came back: %v", found)
	childID := id + ".paint.t1.c0"
	var childRes contract.Result
	require.NoError(t, sdk.GetWorkflow(ctxT(t, 10*time.Second), childID, "").Get(ctxT(t, 10*time.Second), &childRes))
	require.Equal(t, contract.EndedBySingle, childRes.EndedBy)

	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	var res contract.Result
	require.NoError(t, run.Get(ctxT(t, 30*time.Second), &res))
	require.Contains(t, *res.LastOutput.Message[0].Text, "the picture is back")
	recordHistory(t, id, run.GetRunID(), "delegate-with-files")
}

func hasToolResult(c testmodel.Call) bool {
	for _, m := range c.Messages {
		if m.Role == "tool" {
			return true
		}
	}
	return false
}

var _ = client.StartWorkflowOptions{}

// Two capability calls in one response, each returning a file: the next
// request has both tool messages right after the calls (the test model
// refuses any other order, as OpenAI does), then one message showing both
// files.
func TestParallelCallsThatReturnFiles(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	parentMount, childMount := h.mountSpec("files"), h.mountSpec("other")
	child := map[string]any{"name": "painter", "model": "test/child", "mount": childMount}
	parent := map[string]any{"name": "boss", "model": "test/parent", "mount": parentMount,
		"capabilities": []any{map[string]any{"name": "paint", "kind": "delegate", "agent": child}}}
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		switch {
		case c.Model == "child":
			return testmodel.Reply{Text: `{"message":"painted","attachments":["task://cat.png"]}`}
		case hasToolResult(c):
			return testmodel.Reply{Text: `{"message":"both pictures are back","attachments":[]}`}
		default:
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{
				{ID: "call_a", Name: "paint", Arguments: `{"message":"paint it red","files":["task://cat.png"]}`},
				{ID: "call_b", Name: "paint", Arguments: `{"message":"paint it blue","files":["task://cat.png"]}`}}}
		}
	})
	id := "boss-parallel"
	part := upload(t, parentMount, id, "cat.png", "image/png", pngBytes)
	startTask(t, h, id, map[string]any{"agent": parent,
		"input": map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "paint two"}, partMap(part)}}})
	st := waitOutputs(t, id, 1)
	require.Nil(t, st.Error)
	msgs := messages(t, id, nil)
	require.Contains(t, *msgs[len(msgs)-1].Message[0].Text, "both pictures are back")

	var followUp *testmodel.Call
	for _, c := range h.model.Calls() {
		if c.Model == "parent" && hasToolResult(c) {
			followUp = &c
		}
	}
	require.NotNil(t, followUp)
	var roles []string
	for _, m := range followUp.Messages {
		roles = append(roles, m.Role)
	}
	require.Equal(t, []string{"assistant", "tool", "tool", "user"}, roles[len(roles)-4:], "the calls, both tool messages, then the files: %v", followUp.Messages)
	files := followUp.Messages[len(followUp.Messages)-1]
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	require.Equal(t, []string{want, want}, files.Images, "one message shows both returned images")
	require.Contains(t, files.Content, "call_a")
	require.Contains(t, files.Content, "call_b")
}

// An answer over one inline part (100,000 bytes) from an agent with a
// mount becomes a file in the task's space: the output holds its start, a
// line naming the file, and the file part.
func TestLongAnswerBecomesAFile(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	m := h.mountSpec("files")
	spec := agent("writer")
	spec["mount"] = m
	long := strings.Repeat("All work and no play. ", 7_000) // 154,000 bytes
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		b, _ := json.Marshal(map[string]any{"message": long, "attachments": []any{}})
		return testmodel.Reply{Text: string(b)}
	})
	id := "long-answer"
	startTask(t, h, id, map[string]any{"agent": spec, "input": text("write a lot")})
	st := waitOutputs(t, id, 1)
	require.Nil(t, st.Error)
	out := messages(t, id, nil)[1]
	require.Len(t, out.Message, 2, "the preview, then the file")
	require.True(t, strings.HasPrefix(*out.Message[0].Text, long[:2000]))
	require.Contains(t, *out.Message[0].Text, "154000 bytes")
	f := out.Message[1]
	require.NotNil(t, f.File)
	require.Regexp(t, `^task://answers/turn-1-[0-9a-f]{12}\.txt$`, *f.File)
	require.Equal(t, int64(len(long)), *f.SizeBytes)
	require.Equal(t, "text/plain", f.MimeType)
	dir := strings.TrimPrefix(m.URL, "file://")
	var stored []byte
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasPrefix(filepath.Base(p), "turn-1-") {
			stored, _ = os.ReadFile(p)
		}
		return nil
	})
	require.Equal(t, long, string(stored), "the whole answer is in the task's space")
}
