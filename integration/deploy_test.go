package integration

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkworker "go.temporal.io/sdk/worker"
	sdkworkflow "go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workerkit"
	"github.com/agenttask/agenttask/internal/workflows"
	"github.com/agenttask/agenttask/starter"
)

// A deployment rolls from build A to build B with conversations in flight,
// then back to A (docs/deploy.md). Each run stays on the version that
// started it: conversations started on A keep being served by A's worker
// after B is current, those started on B by B's after the rollback, and a
// run continuing as new moves to the version current then. Every
// conversation answers its next input, and no workflow task fails in any
// history: no run's history is ever handed to code that did not write it.
func TestDeployRollsForwardAndBack(t *testing.T) {
	h := newHarness(t)
	h.model.SetHandler(echoLast)
	dep := fmt.Sprintf("it-deploy-%d", queueSeq.Add(1))
	d := starter.NewDeployment(sdk, dep)
	runBuild := func(build string) {
		cfg := h.workerConfig()
		cfg.Deployment = workerkit.Deployment{Name: dep, BuildID: build}
		h.runWorker(cfg)
	}
	// turns counts each conversation's answers; talk sends the next input
	// and waits for its answer.
	turns := map[string]int{}
	talk := func(id string) {
		t.Helper()
		_, err := sendUpdate(t, id, text(fmt.Sprintf("%s q%d", id, turns[id]+1)))
		require.NoError(t, err, id)
		turns[id]++
		waitOutputs(t, id, turns[id])
		ms := messages(t, id, nil)
		require.Equal(t, fmt.Sprintf("echo: %s q%d", id, turns[id]), texts(ms)[len(ms)-1], id)
	}
	start := func(id string, extra map[string]any) {
		t.Helper()
		args := map[string]any{"agent": agent("a"), "input": text(id + " q1")}
		for k, v := range extra {
			args[k] = v
		}
		startTask(t, h, id, args)
		turns[id] = 1
		waitOutputs(t, id, 1)
	}

	// Build A, current: conversations start on it.
	runBuild("a")
	setCurrent(t, d, "a")
	onA := []string{dep + "-a1", dep + "-a2"}
	for _, id := range onA {
		start(id, nil)
		talk(id)
	}
	// One conversation continues as new after ~100 events (about nine turns).
	canID := dep + "-a-can"
	start(canID, map[string]any{"continueAsNewEvents": 100})
	firstRun := describeRun(t, canID)
	for _, id := range append(onA, canID) {
		requirePinned(t, id, "a")
	}

	// Build B, current: A's conversations stay on A and answer.
	runBuild("b")
	setCurrent(t, d, "b")
	for _, id := range onA {
		talk(id)
		requirePinned(t, id, "a")
	}
	onB := []string{dep + "-b1", dep + "-b2"}
	for _, id := range onB {
		start(id, nil)
		talk(id)
		requirePinned(t, id, "b")
	}
	// Continuing as new moves the A-pinned conversation to B, the current
	// version, with its conversation whole.
	for status(t, canID).Run < 2 {
		require.Less(t, turns[canID], 30, "no continue-as-new after 30 turns")
		talk(canID)
	}
	require.Equal(t, "a", pinnedBuild(t, canID, firstRun), "the first run stayed on A")
	requirePinned(t, canID, "b")
	talk(canID)
	require.Len(t, messages(t, canID, nil), 2*turns[canID], "every turn of both runs listed")

	// Roll back with the CLI: A is current again; B's runs stay on B.
	t.Setenv("AGENT_DEPLOYMENT_NAME", dep)
	out, stderr, code := cli(t, h, "deploy", "current", "a")
	require.Equal(t, 0, code, stderr)
	var st starter.DeploymentState
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, dep, st.Deployment)
	require.Equal(t, "a", st.Current)
	for _, id := range append(onB, canID) {
		talk(id)
		requirePinned(t, id, "b")
	}
	for _, id := range onA {
		talk(id)
		requirePinned(t, id, "a")
	}
	after := dep + "-a3"
	start(after, nil)
	requirePinned(t, after, "a")

	// B is draining while its pinned runs are open, drained once they close.
	requireVersionStatus(t, d, "b", "draining")
	for _, id := range append(onB, canID) {
		closeAndWait(t, id)
	}
	requireVersionStatus(t, d, "b", "drained")

	// Every run of the queue: each workflow task completed, by the worker
	// of the run's own version; the first run's history, whose
	// continue-as-new carried AutoUpgrade, replays on the plain workflow.
	runs := queueRuns(t, h, len(onA)+len(onB)+1+1+1) // + the second run of canID + after
	for _, r := range runs {
		events := history(t, r.id, r.runID)
		build := pinnedBuild(t, r.id, r.runID)
		completed := 0
		for _, e := range events {
			require.NotEqual(t, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, e.GetEventType(), "%s run %s: %v", r.id, r.runID, e.GetWorkflowTaskFailedEventAttributes())
			if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
				completed++
				require.Equal(t, build, a.GetDeploymentVersion().GetBuildId(), "%s run %s: event %d completed by another version", r.id, r.runID, e.GetEventId())
				require.Equal(t, enumspb.VERSIONING_BEHAVIOR_PINNED, a.GetVersioningBehavior())
			}
		}
		require.Positive(t, completed, r.id)
	}
	// The server records the command's AutoUpgrade in neither run's events:
	// it shows as the second run not inheriting the first one's pin (a
	// pinned run's continue-as-new without it stays on its version).
	events := history(t, canID, firstRun)
	require.NotNil(t, events[len(events)-1].GetWorkflowExecutionContinuedAsNewEventAttributes(), "the first run continued as new")
	second := history(t, canID, "")[0].GetWorkflowExecutionStartedEventAttributes()
	require.Equal(t, firstRun, second.GetContinuedExecutionRunId())
	require.Nil(t, second.GetInheritedPinnedVersion(), "the second run did not inherit A's pin")
	r := sdkworker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions((&workflows.Workflows{}).AgentTask, sdkworkflow.RegisterOptions{Name: contract.WorkflowType})
	require.NoError(t, r.ReplayWorkflowHistoryWithOptions(nil, &historypb.History{Events: events},
		sdkworker.ReplayWorkflowHistoryOptions{OriginalExecution: sdkworkflow.Execution{ID: canID, RunID: firstRun}}))
	recordHistory(t, canID, firstRun, "deploy-continue-as-new-upgrades")
	recordHistory(t, canID, "", "deploy-continued-on-b") // the run it continued as, pinned to B, closed
}

// setCurrent makes build current once its worker has polled (the server
// knows a version from its first poll).
func setCurrent(t *testing.T, d *starter.Deployment, build string) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = d.SetCurrent(ctxT(t, 30*time.Second), build); err == nil {
			return
		}
	}
	t.Fatalf("setting %s current: %v", build, err)
}

// describeRun is the run ID of id's latest run.
func describeRun(t *testing.T, id string) string {
	t.Helper()
	r, err := sdk.DescribeWorkflowExecution(ctxT(t, 10*time.Second), id, "")
	require.NoError(t, err)
	return r.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}

// pinnedBuild is the build ID a run is pinned to (DescribeWorkflowExecution's
// versioning info); "" with a failed check when it is not pinned.
func pinnedBuild(t *testing.T, id, runID string) string {
	t.Helper()
	r, err := sdk.DescribeWorkflowExecution(ctxT(t, 10*time.Second), id, runID)
	require.NoError(t, err)
	vi := r.GetWorkflowExecutionInfo().GetVersioningInfo()
	require.Equal(t, enumspb.VERSIONING_BEHAVIOR_PINNED, vi.GetBehavior(), "%s run %s: %v", id, runID, vi)
	return vi.GetDeploymentVersion().GetBuildId()
}

func requirePinned(t *testing.T, id, build string) {
	t.Helper()
	require.Equal(t, build, pinnedBuild(t, id, ""), "%s is pinned to build %s", id, build)
}

// requireVersionStatus waits for the deployment to report build's status
// (drainage is refreshed every few seconds on the dev server).
func requireVersionStatus(t *testing.T, d *starter.Deployment, build, want string) {
	t.Helper()
	var st starter.DeploymentState
	eventually(t, 90*time.Second, fmt.Sprintf("version %s %s", build, want), func() bool {
		var err error
		if st, err = d.Describe(ctxT(t, 10*time.Second)); err != nil {
			return false
		}
		for _, v := range st.Versions {
			if v.BuildID == build {
				return v.Status == want
			}
		}
		return false
	})
}

type runRef struct{ id, runID string }

// queueRuns lists every run of the harness's queue, waiting for at least n
// (visibility trails the server by a moment).
func queueRuns(t *testing.T, h *harness, n int) []runRef {
	t.Helper()
	var runs []runRef
	eventually(t, 30*time.Second, fmt.Sprintf("%d runs listed", n), func() bool {
		r, err := sdk.ListWorkflow(ctxT(t, 10*time.Second), &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("TaskQueue = '%s'", h.queue), PageSize: 100})
		if err != nil {
			return false
		}
		runs = runs[:0]
		for _, e := range r.GetExecutions() {
			runs = append(runs, runRef{e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()})
		}
		return len(runs) >= n
	})
	return runs
}
