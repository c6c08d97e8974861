package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/cleanup"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/starter"
)

// filesHolding walks the folders (file:// URLs or paths) and lists every
// file whose bytes contain marker.
func filesHolding(t *testing.T, marker string, folders ...string) []string {
	t.Helper()
	var found []string
	for _, f := range folders {
		root := strings.TrimPrefix(f, "file://")
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			// A deletion may be removing files while this walks: what is
			// gone holds nothing.
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			if bytes.Contains(data, []byte(marker)) {
				found = append(found, p)
			}
			return nil
		})
		require.NoError(t, err)
	}
	return found
}

// storedEvents counts the broker's stored events of the run, read from
// JetStream directly.
func storedEvents(t *testing.T, runID string) uint64 {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	_, s, subj := runStream(t, ctx, runID)
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subj))
	require.NoError(t, err)
	return info.State.Subjects[subj]
}

// runStream opens the broker's stream with a plain NATS client (no codec,
// closed when the test ends) and names the run's subject in it.
func runStream(t *testing.T, ctx context.Context, runID string) (jetstream.JetStream, jetstream.Stream, string) {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	s, err := js.Stream(ctx, broker.StreamName)
	require.NoError(t, err)
	subj, err := broker.Subject(runID)
	require.NoError(t, err)
	return js, s, subj
}

// requireGone checks Temporal has no execution of the workflow ID: Describe
// answers NotFound and visibility lists no run.
func requireGone(t *testing.T, id string) {
	t.Helper()
	_, err := sdk.DescribeWorkflowExecution(ctxT(t, 10*time.Second), id, "")
	var nf *serviceerror.NotFound
	require.True(t, errors.As(err, &nf), "Describe %s after the delete: %v, want NotFound", id, err)
	resp, err := sdk.ListWorkflow(ctxT(t, 10*time.Second), &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowId = '" + id + "'"})
	require.NoError(t, err)
	require.Empty(t, resp.GetExecutions(), "visibility still lists runs of %s", id)
}

// recordDeletion records the latest DeleteTask run of taskID (it completed:
// the delete that ran it answered) and returns its run ID.
func recordDeletion(t *testing.T, taskID, name string) string {
	t.Helper()
	id := cleanup.DeleteWorkflowID(taskID)
	d, err := sdk.DescribeWorkflowExecution(ctxT(t, 10*time.Second), id, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, d.GetWorkflowExecutionInfo().GetStatus(), "the deletion of %s", taskID)
	runID := d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	recordHistory(t, id, runID, name)
	return runID
}

// A streamed run through the API (transcript entries, a stash of the
// streamed turn, events in the broker) is deleted by DELETE /v1/runs/{id}:
// no file of the transcript storage holds its text, the broker holds none
// of its events, its execution is gone and every read of it answers 404
// run_not_found; a second DELETE answers 404 too (nothing is left).
func TestDeleteRunThroughTheAPI(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())
	const marker = "api-delete-marker-q7v2"
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"Sorry about ", "order " + marker + "."}}
	})
	body := map[string]any{"input": "My order " + marker + " is late.", "variables": map[string]any{"customer": "Amina"}, "stream": true}
	s := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, body)
	require.Equal(t, http.StatusOK, s.Resp.StatusCode)
	id := s.Resp.Header.Get("X-Request-Id")
	s.until("done", 30*time.Second)
	require.Eventually(t, func() bool { return len(filesHolding(t, marker, h.transcript)) >= 2 }, 10*time.Second, 50*time.Millisecond,
		"the run's input and answer are in the transcript storage")
	stashed := false
	for _, f := range filesHolding(t, marker, h.transcript) {
		stashed = stashed || strings.Contains(filepath.ToSlash(f), "/stash/")
	}
	require.True(t, stashed, "the streamed turn's text is stashed: %v", filesHolding(t, marker, h.transcript))
	require.NotZero(t, storedEvents(t, id), "the streamed events are in the broker")

	// A view key may read runs, not delete them.
	requireProblem(t, api.call("DELETE", "/v1/runs/"+id, viewKey, nil), http.StatusForbidden, "forbidden", "")

	recordHistory(t, id, "", "deleted-api-run") // before the delete: afterwards it is gone
	r := api.call("DELETE", "/v1/runs/"+id, callKey, nil)
	require.Equal(t, http.StatusNoContent, r.Status, "%s", r.Raw)
	first := recordDeletion(t, id, "delete-task-api-run")
	require.Empty(t, r.Raw)
	require.Empty(t, filesHolding(t, marker, h.transcript), "no object of the transcript or stash storage holds the run's text")
	require.Zero(t, storedEvents(t, id), "the broker holds none of the run's events")
	requireGone(t, id)
	requireProblem(t, api.call("GET", "/v1/runs/"+id, viewKey, nil), http.StatusNotFound, "run_not_found", "")
	requireProblem(t, api.call("GET", "/v1/runs/"+id+"/messages", viewKey, nil), http.StatusNotFound, "run_not_found", "")
	requireProblem(t, api.call("GET", "/v1/runs/"+id+"/events", viewKey, nil), http.StatusNotFound, "run_not_found", "")

	// Repeating the delete is harmless: nothing is left, so 404.
	requireProblem(t, api.call("DELETE", "/v1/runs/"+id, callKey, nil), http.StatusNotFound, "run_not_found", "")
	again := recordDeletion(t, id, "delete-task-nothing-left") // a new run of the same deletion, finding nothing
	require.NotEqual(t, first, again)
	requireProblem(t, api.call("DELETE", "/v1/runs/run-aaaaaaaaaaaaaaaaaaaaaaaaaa", callKey, nil), http.StatusNotFound, "run_not_found", "")
}

// A task with a sub-task (a delegate capability), files in both tasks'
// spaces and a conversation still open is deleted by `starter delete`:
// both executions are gone, no file of the transcript or of either mount
// holds the task's text, and the starter's reads answer TASK_NOT_FOUND. A
// second delete, through the CLI or the Go client, is TASK_NOT_FOUND too.
func TestStarterDeleteRemovesATaskAndItsSubTask(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	const marker = "cli-delete-marker-k3p8"
	parentMount, childMount := h.mountSpec("files"), h.mountSpec("other")
	child := map[string]any{"name": "helper", "model": "test/child", "mount": childMount}
	parent := map[string]any{"name": "boss", "model": "test/parent", "mount": parentMount,
		"capabilities": []any{map[string]any{"name": "help", "kind": "delegate", "agent": child}}}
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		switch {
		case c.Model == "child":
			return testmodel.Reply{Text: `{"message":"helped with ` + marker + `","attachments":["task://notes.txt"]}`}
		case hasToolResult(c):
			return testmodel.Reply{Text: `{"message":"done: ` + marker + `","attachments":[]}`}
		default:
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{
				{ID: "call_a", Name: "help", Arguments: `{"message":"read ` + marker + `","files":["task://notes.txt"]}`}}}
		}
	})
	id := "boss-delete"
	part := upload(t, parentMount, id, "notes.txt", "text/plain", []byte("notes of "+marker))
	startTask(t, h, id, map[string]any{"agent": parent, "mode": "conversation",
		"input": map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "help with " + marker}, partMap(part)}}})
	st := waitOutputs(t, id, 1)
	require.Nil(t, st.Error)
	resp, err := sdk.ListWorkflow(ctxT(t, 10*time.Second), &workflowservice.ListWorkflowExecutionsRequest{Query: "ParentWorkflowId = '" + id + "'"})
	require.NoError(t, err)
	require.Len(t, resp.GetExecutions(), 1, "one sub-task")
	childID := resp.GetExecutions()[0].GetExecution().GetWorkflowId()
	folders := []string{h.transcript, h.mounts["files"], h.mounts["other"]}
	before := filesHolding(t, marker, folders...)
	inChild := false
	for _, f := range before {
		inChild = inChild || strings.HasPrefix(f, strings.TrimPrefix(h.mounts["other"], "file://"))
	}
	require.True(t, inChild, "the sub-task's space holds the copied file: %v", before)

	// Before the delete: afterwards they are gone.
	recordHistory(t, id, "", "deleted-conversation-with-sub-task")
	recordHistory(t, childID, "", "deleted-sub-task")
	out, errOut, code := cli(t, h, "delete", id)
	require.Equal(t, 0, code, "stdout %s stderr %s", out, errOut)
	recordDeletion(t, id, "delete-task-with-sub-task")
	var res starter.DeleteResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, []string{id, childID}, res.Tasks)
	require.Equal(t, 1, res.Terminated, "the open conversation was running; the sub-task had completed")
	require.GreaterOrEqual(t, res.Executions, 2)
	require.GreaterOrEqual(t, res.Files, 2, "the parent's upload and the sub-task's copy")
	require.Positive(t, res.TranscriptObjects)

	require.Empty(t, filesHolding(t, marker, folders...), "no object of the transcript, stash or mounts holds the task's text")
	requireGone(t, id)
	requireGone(t, childID)
	ctx := ctxT(t, 30*time.Second)
	_, err = h.tasks.Status(ctx, id)
	require.Equal(t, starter.ErrTaskNotFound, contract.TypeOf(err), "%v", err)
	_, err = h.tasks.Messages(ctx, id, nil)
	require.Equal(t, starter.ErrTaskNotFound, contract.TypeOf(err), "%v", err)

	// Again: nothing is left.
	_, errOut, code = cli(t, h, "delete", id)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, starter.ErrTaskNotFound)
	_, err = h.tasks.Delete(ctx, childID)
	require.Equal(t, starter.ErrTaskNotFound, contract.TypeOf(err), "%v", err)

	// Only agent tasks: the deletion's own workflow (a DeleteTask) is
	// refused, and left where it is.
	_, err = h.tasks.Delete(ctx, cleanup.DeleteWorkflowID(id))
	require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err), "%v", err)
	require.ErrorContains(t, err, "not an agent task")
	_, err = sdk.DescribeWorkflowExecution(ctx, cleanup.DeleteWorkflowID(id), "")
	require.NoError(t, err, "the DeleteTask workflow is still there")
}

// A deletion outlives the request that began it: with no worker to run it,
// DELETE answers 202 (Location: the run) once the run timeout passes, and
// nothing is removed yet; once a worker is back, DELETE again joins the
// same deletion (202 while it goes on) and answers 204 when it is done.
func TestDeleteRunGoesOnAfterTheRequestGivesUp(t *testing.T) {
	h := newHarness(t)
	stop := h.runWorker(h.workerConfig())
	h.model.SetHandler(echoLast)
	api := newAPI(t, h, withRunTimeout(5*time.Second))
	createSeedTask(t, api, seedTask())
	const marker = "late-delete-marker-w4n6"
	r := api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "Order " + marker, "variables": map[string]any{"customer": "Amina"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	id := r.Header.Get("X-Request-Id")
	require.NotEmpty(t, filesHolding(t, marker, h.transcript))
	recordHistory(t, id, "", "deleted-late-run") // before the delete: afterwards it is gone

	stop()
	r = api.call("DELETE", "/v1/runs/"+id, callKey, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	require.Equal(t, "/v1/runs/"+id, r.Header.Get("Location"))
	require.Equal(t, map[string]any{"deleting": true}, r.data())
	require.NotEmpty(t, filesHolding(t, marker, h.transcript), "no worker ran the deletion yet")

	h.startWorker()
	// Each DELETE joins the same deletion: 202 while it goes on (a task the
	// stopped worker had polled waits out its workflow task timeout), 204
	// once it is done.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		r = api.call("DELETE", "/v1/runs/"+id, callKey, nil)
		if r.Status != http.StatusAccepted || time.Now().After(deadline) {
			break
		}
	}
	require.Equal(t, http.StatusNoContent, r.Status, "DELETE again joins the running deletion: %s", r.Raw)
	recordDeletion(t, id, "delete-task-outlived-its-request") // started while no worker ran
	require.Empty(t, filesHolding(t, marker, h.transcript))
	requireGone(t, id)
	requireProblem(t, api.call("GET", "/v1/runs/"+id+"/messages", viewKey, nil), http.StatusNotFound, "run_not_found", "")
}
