package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/cleanup"
	"github.com/agenttask/agenttask/starter"
)

// A resumed or rescued task (docs/design.md#continuations) reads its earlier
// entries from the earlier task's transcript. Deleting the earlier task, or
// the retention sweep judging it expired, must leave what a live
// continuation reads: the continuation answers across a continue-as-new and
// its messages stay whole. Once the continuation is deleted too, nothing of
// either is left.

// continuedPair starts orig (two turns, then closed) and resumes it as
// cont (one turn); it returns cont's messages after its first answer and
// orig's first run ID.
func continuedPair(t *testing.T, h *harness, orig, cont, marker string) ([]contract.Message, string) {
	t.Helper()
	startTask(t, h, orig, map[string]any{"agent": agent("a"), "input": text("q1 " + marker), "continueAsNewEvents": 100})
	waitOutputs(t, orig, 1)
	_, err := sendUpdate(t, orig, text("q2 "+marker))
	require.NoError(t, err)
	waitOutputs(t, orig, 2)
	closeAndWait(t, orig)
	id, err := h.tasks.Resume(ctxT(t, 30*time.Second), orig, textIO("resumed"), starter.StartOptions{TaskID: cont})
	require.NoError(t, err)
	require.Equal(t, cont, id)
	waitOutputs(t, cont, 1)
	msgs := messages(t, cont, nil)
	require.Equal(t, []string{"q1 " + marker, "echo: q1 " + marker, "q2 " + marker, "echo: q2 " + marker, "resumed", "echo: resumed"}, texts(msgs))
	return msgs, firstRunID(t, orig)
}

// answersAcrossContinueAsNew sends inputs to cont until it has continued
// as new and answered once more after it, then checks its messages are
// whole: the inherited entries first, then every input and its answer.
func answersAcrossContinueAsNew(t *testing.T, cont string, inherited []contract.Message) {
	t.Helper()
	want := texts(inherited)
	n := 1 // outputs so far
	for i := 0; ; i++ {
		require.Less(t, i, 60, "the continuation never continued as new")
		in := fmt.Sprint("after ", i)
		_, err := sendUpdate(t, cont, text(in))
		require.NoError(t, err, "input %d of the continuation", i)
		n++
		waitOutputs(t, cont, n)
		want = append(want, in, "echo: "+in)
		if status(t, cont).Run >= 2 {
			// One more input, answered by the continued run.
			in := fmt.Sprint("after ", i, " (continued)")
			_, err := sendUpdate(t, cont, text(in))
			require.NoError(t, err, "the first input after the continue-as-new")
			n++
			waitOutputs(t, cont, n)
			want = append(want, in, "echo: "+in)
			break
		}
	}
	msgs := messages(t, cont, nil)
	require.Equal(t, want, texts(msgs), "the continuation's messages are whole")
	requireSeedOrder(t, msgs)
	page := messages(t, cont, contract.MessagesPage{After: 0, Limit: 3})
	require.Equal(t, want[:3], texts(page), "the inherited entries read by page")
}

// DELETE of the original: it is gone (its execution, its reads), what its
// live continuation reads is kept and reported, and the continuation goes
// on; deleting the continuation then removes the kept entries too.
func TestDeletingTheOriginalKeepsWhatItsContinuationReads(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(echoLast)
	const marker = "keep-for-cont-d7q2"
	orig, cont := "keep-orig", "keep-cont"
	inherited, origRun := continuedPair(t, h, orig, cont, marker)

	ctx := ctxT(t, 2*time.Minute)
	res, err := h.tasks.Delete(ctx, orig)
	require.NoError(t, err)
	require.Equal(t, []string{orig}, res.Tasks)
	require.Positive(t, res.Executions)
	requireKeptFor(t, res.Kept, orig, origRun, cont, 3) // q1, its answer, q2: the last output travels with the continuation
	requireGone(t, orig)
	_, err = h.tasks.Messages(ctx, orig, nil)
	require.Equal(t, starter.ErrTaskNotFound, contract.TypeOf(err), "the original reads as deleted: %v", err)
	_, err = h.tasks.Delete(ctx, orig)
	require.Equal(t, starter.ErrTaskNotFound, contract.TypeOf(err), "nothing of the original is left to delete: %v", err)
	// Its transcript read through the store as a client would, once
	// Temporal has no execution: not found either.
	reader := starter.New(sdk, h.queue)
	closer, err := reader.ReadTranscripts(ctx, h.transcript, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = closer.Close() })
	_, err = reader.Messages(ctx, orig, nil)
	require.Equal(t, starter.ErrTaskNotFound, contract.TypeOf(err), "%v", err)

	answersAcrossContinueAsNew(t, cont, inherited)

	// The continuation deleted: the original's kept entries go with it.
	closeAndWait(t, cont)
	res, err = h.tasks.Delete(ctx, cont)
	require.NoError(t, err)
	require.Empty(t, res.Kept)
	require.Empty(t, filesHolding(t, marker, h.transcript), "no object of either task is left")
}

// The retention sweep judges the original expired while its continuation
// runs: the original's execution is deleted, what the continuation reads
// is kept, the continuation goes on; once the continuation has closed and
// expired too, its deletion removes the kept entries.
func TestRetentionKeepsWhatALiveContinuationReads(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(echoLast)
	const marker = "keep-for-cont-r5w9"
	orig, cont := "retain-orig", "retain-cont"
	inherited, _ := continuedPair(t, h, orig, cont, marker)

	// A sweep that judges with a retention of a second: the original
	// closed longer ago, the continuation runs.
	time.Sleep(1100 * time.Millisecond)
	totals := sweep(t, h, time.Second)
	require.Equal(t, 1, totals.Deleted, "the original expired: %+v", totals)
	requireGone(t, orig)
	require.NotEmpty(t, filesHolding(t, marker, h.transcript), "the entries the continuation reads are kept")

	answersAcrossContinueAsNew(t, cont, inherited)

	// Another sweep keeps them while the continuation lives.
	totals = sweep(t, h, time.Second)
	require.Zero(t, totals.Deleted, "%+v", totals)
	require.Equal(t, 1, totals.KeptForContinuations, "%+v", totals)
	require.Len(t, messages(t, cont, nil), len(inherited)+2*(status(t, cont).Outputs-1))

	// The continuation closes and expires in turn: its deletion releases
	// the kept entries, and nothing of either task is left.
	closeAndWait(t, cont)
	time.Sleep(1100 * time.Millisecond)
	totals = sweep(t, h, time.Second)
	require.Equal(t, 1, totals.Deleted, "the continuation expired: %+v", totals)
	requireGone(t, cont)
	require.Empty(t, filesHolding(t, marker, h.transcript), "no object of either task is left")
	require.Equal(t, cleanup.SweepTotals{}, sweep(t, h, time.Second), "nothing is left to sweep")
}

// sweep runs one RetentionSweep on the harness's queue judging by
// retention, and returns its totals.
func sweep(t *testing.T, h *harness, retention time.Duration) cleanup.SweepTotals {
	t.Helper()
	ctx := ctxT(t, 2*time.Minute)
	run, err := sdk.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: fmt.Sprintf("%s-sweep-%d", h.queue, time.Now().UnixNano()), TaskQueue: h.queue},
		cleanup.RetentionSweepName, cleanup.SweepInput{Retention: retention})
	require.NoError(t, err)
	var totals cleanup.SweepTotals
	require.NoError(t, run.Get(ctx, &totals))
	return totals
}

// requireKept checks a deletion kept, of orig, the entries below from for
// cont alone.
func requireKeptFor(t *testing.T, kept []starter.KeptTranscript, orig, origRun, cont string, from int) {
	t.Helper()
	require.Len(t, kept, 1, "%+v", kept)
	k := kept[0]
	require.Equal(t, orig, k.TaskID)
	require.Equal(t, origRun, k.FirstRunID)
	require.Equal(t, from, k.Entries, "the entries the continuation reads")
	require.Equal(t, from, k.Below)
	require.Len(t, k.For, 1)
	require.Equal(t, cont, k.For[0].TaskID, "the deletion names the live continuation")
	require.Equal(t, firstRunID(t, cont), k.For[0].FirstRunID)
	require.Equal(t, from, k.For[0].From)
}

// DELETE /v1/runs/{id} of a run a live task continues answers 200 and
// says what stays and for whom (not a bare 204): the run is gone, its
// continuation still reads the whole conversation.
func TestDeleteRunThroughTheAPIReportsWhatItsContinuationKeeps(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(echoLast)
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())
	const marker = "api-keep-marker-z3c8"
	r := api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "Order " + marker, "variables": map[string]any{"customer": "Amina"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	id := r.Header.Get("X-Request-Id")
	require.NoError(t, h.tasks.Close(ctxT(t, 30*time.Second), id))
	_, _ = h.tasks.Result(ctxT(t, 30*time.Second), id)
	cont, err := h.tasks.Resume(ctxT(t, 30*time.Second), id, textIO("and then?"), starter.StartOptions{TaskID: "api-keep-cont"})
	require.NoError(t, err)
	waitOutputs(t, cont, 1)
	before := texts(messages(t, cont, nil))
	require.Len(t, before, 4)

	r = api.call("DELETE", "/v1/runs/"+id, callKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	var body struct {
		Data struct {
			Deleted bool `json:"deleted"`
			Kept    []struct {
				TaskID  string `json:"taskId"`
				Entries int    `json:"entries"`
				For     []struct {
					TaskID string `json:"taskId"`
					From   int    `json:"from"`
				} `json:"for"`
			} `json:"kept"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.Raw, &body), "%s", r.Raw)
	require.True(t, body.Data.Deleted)
	require.Len(t, body.Data.Kept, 1, "%s", r.Raw)
	require.Equal(t, id, body.Data.Kept[0].TaskID)
	require.Equal(t, 1, body.Data.Kept[0].Entries, "the input; the answer travels with the continuation")
	require.Len(t, body.Data.Kept[0].For, 1)
	require.Equal(t, cont, body.Data.Kept[0].For[0].TaskID)
	require.Equal(t, 1, body.Data.Kept[0].For[0].From)

	requireGone(t, id)
	requireProblem(t, api.call("GET", "/v1/runs/"+id+"/messages", viewKey, nil), http.StatusNotFound, "run_not_found", "")
	requireProblem(t, api.call("DELETE", "/v1/runs/"+id, callKey, nil), http.StatusNotFound, "run_not_found", "")
	_, err = sendUpdate(t, cont, text("more"))
	require.NoError(t, err)
	waitOutputs(t, cont, 2)
	require.Equal(t, append(before, "more", "echo: more"), texts(messages(t, cont, nil)))
}

// Files uploaded for a task that never started have no transcript: the
// sweep finds them in the mounts and removes them once they are older
// than the retention; a space whose task runs is kept.
func TestRetentionExpiresTheFilesOfATaskThatNeverStarted(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	const marker, liveMarker = "never-started-u6j4", "running-space-n8t1"
	upload(t, h.mountSpec("files"), "never-started", "notes.txt", "text/plain", []byte(marker))
	upload(t, h.mountSpec("other"), "never-started", "more/notes.txt", "text/plain", []byte(marker))
	upload(t, h.mountSpec("files"), "space-running", "notes.txt", "text/plain", []byte(liveMarker))
	startTask(t, h, "space-running", map[string]any{"agent": agent("a"), "mode": "conversation"})
	folders := []string{h.mounts["files"], h.mounts["other"]}
	require.Len(t, filesHolding(t, marker, folders...), 2)

	time.Sleep(1100 * time.Millisecond)
	totals := sweep(t, h, time.Second)
	require.Equal(t, 1, totals.Deleted, "%+v", totals)
	require.GreaterOrEqual(t, totals.Spaces, 2, "the never-started task's spaces, in both mounts: %+v", totals)
	require.Empty(t, filesHolding(t, marker, folders...), "the never-started task's files are gone")
	require.Len(t, filesHolding(t, liveMarker, folders...), 1, "the running task's file is kept")
}
