package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/blobkey"
	"github.com/agenttask/agenttask/internal/cleanup"
	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/internal/transcript"
	"github.com/agenttask/agenttask/starter"
)

// With AGENT_RETENTION=1m: a run through the API ends; the scheduled sweep
// seals its transcript; its execution is deleted as Temporal's own
// retention would; its messages are then served from the transcript by
// the API and the starter (Go client and CLI), the same entries as before;
// then the sweep, a RetentionSweep the schedule started, removes its
// objects (transcript, stash, mount files) and its messages answer 404
// run_not_found / TASK_NOT_FOUND. A task that is still running, its
// objects older than the retention, is kept.
func TestRetentionServesThenSweepsAClosedTask(t *testing.T) {
	h := newHarness(t)
	cfg := h.workerConfig()
	retention, err := cleanup.ParseRetention("1m")
	require.NoError(t, err)
	cfg.Retention = retention
	h.runWorker(cfg)
	sc := sdk.ScheduleClient().GetHandle(ctxT(t, 10*time.Second), cleanup.ScheduleID(h.queue))
	t.Cleanup(func() { _ = sc.Delete(ctxT(t, 10*time.Second)) }) // no sweeps for a queue nobody serves
	store, err := transcript.Open(ctxT(t, 10*time.Second), h.transcript)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	api := newAPI(t, h, func(c *tasksapi.Config) { c.Transcript = store })
	createSeedTask(t, api, seedTask())

	// A task that stays running past the retention.
	const liveMarker = "retention-live-marker-p4k1"
	startTask(t, h, "retention-live", map[string]any{"agent": agent("a"), "input": text("hello " + liveMarker), "mode": "conversation"})
	waitOutputs(t, "retention-live", 1)
	liveStarted := time.Now()

	// The schedule exists, says what it does, and sweeps every 15s.
	desc, err := sc.Describe(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Len(t, desc.Schedule.Spec.Intervals, 1)
	require.Equal(t, 15*time.Second, desc.Schedule.Spec.Intervals[0].Every)
	require.Contains(t, desc.Schedule.State.Note, "AGENT_RETENTION (1m0s)")
	require.Equal(t, enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, desc.Schedule.Policy.Overlap)

	const marker = "retention-marker-v8d3"
	r := api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "My order " + marker + " is late.", "variables": map[string]any{"customer": "Amina"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	id := r.Header.Get("X-Request-Id")
	require.NotEmpty(t, id)
	upload(t, h.mountSpec("files"), id, "notes.txt", "text/plain", []byte("notes of "+marker))
	ctx := ctxT(t, 5*time.Minute)
	require.NoError(t, h.tasks.Close(ctx, id))
	_, _ = h.tasks.Result(ctx, id)
	d, err := sdk.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	require.NotEqual(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())

	before := api.call("GET", "/v1/runs/"+id+"/messages", viewKey, nil)
	require.Equal(t, http.StatusOK, before.Status, "%s", before.Raw)
	beforeData := jsonField(t, before.Raw, "data")
	var entries []contract.Message
	require.NoError(t, json.Unmarshal(beforeData, &entries))
	require.Len(t, entries, 2, "the input and the answer: %s", beforeData)
	require.Contains(t, string(beforeData), marker)
	fromClient, err := h.tasks.AllMessages(ctx, id)
	require.NoError(t, err)
	require.JSONEq(t, string(beforeData), jsonOf(fromClient))

	// The sweep seals the closed task first: its last output, stamped by
	// the workflow alone, is written to the transcript. (A sweep now, not
	// at the next tick: Temporal takes its time deleting, below, and the
	// transcript must be read before the retention, counted from the
	// close, has passed.)
	require.NoError(t, sc.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL}))
	seg := blobkey.Segment(id)
	eventually(t, 90*time.Second, "the sweep seals the closed task's transcript", func() bool {
		fs, err := store.Describe(ctx, seg)
		return err == nil && len(fs) == 1 && fs[0].Stashed(cleanup.SealedName) && len(fs[0].Entries) == len(entries)
	})

	recordHistory(t, id, "", "retention-closed-run") // before Temporal deletes it, below
	// Temporal's retention, simulated: the execution is deleted.
	_, err = sdk.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{
		Namespace: temporalNS, WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: d.GetWorkflowExecutionInfo().GetExecution().GetRunId()}})
	require.NoError(t, err)
	askedAt := time.Now()
	eventually(t, 2*time.Minute, "Temporal deletes the execution", func() bool {
		_, err := sdk.DescribeWorkflowExecution(ctx, id, "")
		var nf *serviceerror.NotFound
		return errors.As(err, &nf)
	})
	t.Logf("Temporal deleted the execution in %s", time.Since(askedAt).Round(time.Millisecond))

	// Served from the transcript: the same entries, the same pages.
	after := api.call("GET", "/v1/runs/"+id+"/messages", viewKey, nil)
	require.Equal(t, http.StatusOK, after.Status, "%s", after.Raw)
	require.JSONEq(t, string(beforeData), string(jsonField(t, after.Raw, "data")))
	page := api.call("GET", "/v1/runs/"+id+"/messages?after=1&limit=1", viewKey, nil)
	require.Equal(t, http.StatusOK, page.Status, "%s", page.Raw)
	require.JSONEq(t, jsonOf(entries[1:]), string(jsonField(t, page.Raw, "data")))
	requireProblem(t, api.call("GET", "/v1/runs/"+id, viewKey, nil), http.StatusNotFound, "run_not_found", "")

	_, err = h.tasks.Messages(ctx, id, nil)
	require.Equal(t, starter.ErrTaskNotFound, contract.TypeOf(err), "without the store the client finds nothing: %v", err)
	reader := starter.New(sdk, h.queue)
	closer, err := reader.ReadTranscripts(ctx, h.transcript, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = closer.Close() })
	got, err := reader.Messages(ctx, id, nil)
	require.NoError(t, err)
	require.JSONEq(t, string(beforeData), jsonOf(got))
	got, err = reader.AllMessages(ctx, id)
	require.NoError(t, err)
	require.JSONEq(t, string(beforeData), jsonOf(got))
	t.Setenv("AGENT_TRANSCRIPT_URL", h.transcript) // the CLI's environment (cli passes it on)
	out, errOut, code := cli(t, h, "messages", id)
	require.Equal(t, 0, code, "stdout %s stderr %s", out, errOut)
	require.JSONEq(t, string(beforeData), out)

	closedAt := d.GetWorkflowExecutionInfo().GetCloseTime().AsTime()
	t.Logf("served from the transcript until %s after the task closed (the retention is %s)", time.Since(closedAt).Round(time.Millisecond), retention)

	// The scheduled sweep removes every object of it.
	folders := []string{h.transcript, h.mounts["files"], h.mounts["other"]}
	require.NotEmpty(t, filesHolding(t, marker, folders...))
	eventually(t, 3*time.Minute, "the retention sweep removes the task's objects", func() bool {
		fs, err := store.Describe(ctx, seg)
		return err == nil && len(fs) == 0 && len(filesHolding(t, marker, folders...)) == 0
	})
	// By DeleteTask, a child of a RetentionSweep that the schedule started.
	dd, err := sdk.DescribeWorkflowExecution(ctx, cleanup.DeleteWorkflowID(id), "")
	require.NoError(t, err)
	parent := dd.GetWorkflowExecutionInfo().GetParentExecution().GetWorkflowId()
	require.True(t, strings.HasPrefix(parent, cleanup.SweepWorkflowID(h.queue)), "the deletion's parent %q is a scheduled sweep", parent)
	desc, err = sc.Describe(ctx)
	require.NoError(t, err)
	started := map[string]bool{}
	for _, a := range desc.Info.RecentActions {
		started[a.StartWorkflowResult.WorkflowID] = true
	}
	require.True(t, started[parent], "the schedule's recent actions %v include the sweep %s", started, parent)
	pd, err := sdk.DescribeWorkflowExecution(ctx, parent, "")
	require.NoError(t, err)
	require.Equal(t, cleanup.RetentionSweepName, pd.GetWorkflowExecutionInfo().GetType().GetName())
	// The sweep that deleted it, once it has ended, and its child deletion.
	sweepRun := pd.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	require.NoError(t, sdk.GetWorkflow(ctx, parent, sweepRun).Get(ctxT(t, 2*time.Minute), nil))
	recordHistory(t, parent, sweepRun, "retention-sweep-deletes")
	recordHistory(t, cleanup.DeleteWorkflowID(id), dd.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "retention-delete-task")

	requireProblem(t, api.call("GET", "/v1/runs/"+id+"/messages", viewKey, nil), http.StatusNotFound, "run_not_found", "")
	_, err = reader.Messages(ctx, id, nil)
	require.Equal(t, starter.ErrTaskNotFound, contract.TypeOf(err), "%v", err)

	// The running task, its objects older than the retention, is still
	// whole after a sweep that started once they were.
	threshold := liveStarted.Add(retention)
	var keptBy runRef
	eventually(t, time.Minute, "a sweep started after the running task's objects aged past the retention ends", func() bool {
		desc, err := sc.Describe(ctx)
		if err != nil {
			return false
		}
		for _, a := range desc.Info.RecentActions {
			if !a.ActualTime.After(threshold) {
				continue
			}
			d, err := sdk.DescribeWorkflowExecution(ctx, a.StartWorkflowResult.WorkflowID, a.StartWorkflowResult.FirstExecutionRunID)
			if err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
				keptBy = runRef{a.StartWorkflowResult.WorkflowID, d.GetWorkflowExecutionInfo().GetExecution().GetRunId()}
				return true
			}
		}
		return false
	})
	live, err := sdk.DescribeWorkflowExecution(ctx, "retention-live", "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, live.GetWorkflowExecutionInfo().GetStatus())
	require.NotEmpty(t, filesHolding(t, liveMarker, h.transcript), "the running task's transcript is kept")
	liveMsgs, err := h.tasks.Messages(ctx, "retention-live", nil)
	require.NoError(t, err)
	require.Len(t, liveMsgs, 2)
	recordHistory(t, keptBy.id, keptBy.runID, "retention-sweep-keeps-running")
}

// jsonField is one member of a JSON object, as it was sent.
func jsonField(t *testing.T, raw []byte, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	require.Contains(t, m, name, "%s", raw)
	return m[name]
}

// Each worker keeps its queue's retention schedule: created once, left
// alone when it matches, updated when the retention changes, deleted when
// retention is turned off.
func TestRetentionScheduleIsKept(t *testing.T) {
	h := newHarness(t)
	ctx := ctxT(t, time.Minute)
	sched := retentionSchedule(h.queue)
	t.Cleanup(func() { _ = sched.Delete(ctxT(t, 10*time.Second)) })
	require.NoError(t, cleanup.EnsureSchedule(ctx, sdk, h.queue, 4*time.Hour))
	first, err := sched.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, time.Hour, first.Schedule.Spec.Intervals[0].Every)
	require.Contains(t, first.Schedule.State.Note, "AGENT_RETENTION (4h0m0s)")
	action, ok := first.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Equal(t, h.queue, action.TaskQueue)
	require.Equal(t, cleanup.RetentionSweepName, action.Workflow)

	// Again, the same: nothing changes (a second worker starting).
	require.NoError(t, cleanup.EnsureSchedule(ctx, sdk, h.queue, 4*time.Hour))
	again, err := sched.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, first.Info.LastUpdateAt, again.Info.LastUpdateAt)

	// Another retention: updated in place.
	require.NoError(t, cleanup.EnsureSchedule(ctx, sdk, h.queue, 2*time.Minute))
	changed, err := sched.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, changed.Schedule.Spec.Intervals[0].Every)
	require.Contains(t, changed.Schedule.State.Note, "AGENT_RETENTION (2m0s)")

	// Off: the schedule goes.
	require.NoError(t, cleanup.EnsureSchedule(ctx, sdk, h.queue, 0))
	_, err = sched.Describe(ctx)
	var nf *serviceerror.NotFound
	require.True(t, errors.As(err, &nf), "the schedule after retention was turned off: %v", err)
	require.NoError(t, cleanup.EnsureSchedule(ctx, sdk, h.queue, 0), "off again, with no schedule")
}

// retentionSchedule is the retention schedule of queue.
func retentionSchedule(queue string) client.ScheduleHandle {
	return sdk.ScheduleClient().GetHandle(context.Background(), cleanup.ScheduleID(queue))
}
