package integration

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workerkit"
	"github.com/agenttask/agenttask/starter"
)

// previousRelease is the commit of the last release (the last landing of
// main before the current work): its worker runs beside this one in the
// mixed-build tests. Move it forward at each release (docs/deploy.md).
const previousRelease = "6967677a68474fb51c3cd9f35a957a0cdee6e7bf"

var (
	previousOnce sync.Once
	previousBin  string
	previousErr  error
)

// previousReleaseWorker is the worker binary of previousRelease, built once
// per test run from the repository's own history (git archive: no
// worktree is left behind).
func previousReleaseWorker(t *testing.T) string {
	t.Helper()
	previousOnce.Do(func() {
		dir := filepath.Join(workDir, "previous-release")
		if previousErr = extractCommit(previousRelease, dir); previousErr != nil {
			return
		}
		previousBin = filepath.Join(dir, "worker.bin")
		if err := goBuildIn(dir, previousBin, "./cmd/worker"); err != nil {
			previousErr = fmt.Errorf("building the worker of %s: %w", previousRelease, err)
		}
	})
	require.NoError(t, previousErr, "the mixed-build tests need the repository's history (a full clone) to build the previous release")
	return previousBin
}

// extractCommit writes the tree of commit into dir.
func extractCommit(commit, dir string) error {
	var out, stderr bytes.Buffer
	cmd := exec.Command("git", "-C", repoRoot, "archive", "--format=tar", commit)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git archive %s: %v: %s", commit, err, stderr.String())
	}
	tr := tar.NewReader(&out)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if err := os.WriteFile(p, data, os.FileMode(hdr.Mode)&0o777); err != nil {
				return err
			}
		}
	}
}

// startPreviousWorker runs the previous release's worker process on the
// harness's queue, with extra environment.
func startPreviousWorker(t *testing.T, h *harness, extra ...string) *exec.Cmd {
	t.Helper()
	return startProcess(t, previousReleaseWorker(t), append(h.workerEnv(), extra...), io.Discard)
}

// servedBy counts, over every run of the tasks, the workflow tasks each
// process completed (by the pid in its identity) and the workflow-task
// failures.
func servedBy(t *testing.T, ids []string) (byPid map[string]int, wftFailed int) {
	t.Helper()
	byPid = map[string]int{}
	for _, id := range ids {
		for runID := firstRunID(t, id); runID != ""; {
			events := history(t, id, runID)
			runID = ""
			for _, e := range events {
				if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
					byPid[strings.SplitN(a.GetIdentity(), "@", 2)[0]]++
				}
				if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED {
					wftFailed++
				}
				if c := e.GetWorkflowExecutionContinuedAsNewEventAttributes(); c != nil {
					runID = c.GetNewExecutionRunId()
				}
			}
		}
	}
	return byPid, wftFailed
}

// firstRunID is the run ID of id's first run.
func firstRunID(t *testing.T, id string) string {
	t.Helper()
	r, err := sdk.DescribeWorkflowExecution(ctxT(t, 10*time.Second), id, "")
	require.NoError(t, err)
	return r.GetWorkflowExecutionInfo().GetFirstRunId()
}

// A rolling deploy without build IDs, as a Kubernetes rolling update does
// it: the previous release's worker alone, then this build's beside it on
// one queue for many turns, then this build's alone. Tasks start on either
// (and so on either's rules), continue as new onto either, and their
// workflow tasks and model calls go to both. While this build's worker is
// away for a moment, the previous release's meets runs on rules it does not
// know: it fails their workflow tasks (retried), never the tasks, and this
// build's takes them back. No task fails, every input is answered.
func TestRollingDeployMixedBuildsServeOneQueue(t *testing.T) {
	h := newHarness(t)
	h.model.SetHandler(echoLast)
	old := startPreviousWorker(t, h)
	ids := []string{"mixed-1", "mixed-2", "mixed-budget"}
	turns := map[string]int{}
	start := func(id string) {
		args := map[string]any{"agent": agent("a"), "input": text(id + " q1"), "continueAsNewEvents": 100}
		if strings.HasSuffix(id, "budget") {
			args["budget"] = map[string]any{"inputTokens": 1_000_000, "outputTokens": 1_000_000}
		}
		startTask(t, h, id, args)
		turns[id] = 1
	}
	round := func(ids []string) {
		t.Helper()
		for _, id := range ids {
			if turns[id] > 0 {
				turns[id]++
				require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text(fmt.Sprintf("%s q%d", id, turns[id]))))
			} else {
				start(id)
			}
		}
		for _, id := range ids {
			waitOutputsWithin(t, id, turns[id], 3*time.Minute)
			ms := messages(t, id, nil)
			require.Equal(t, fmt.Sprintf("echo: %s q%d", id, turns[id]), texts(ms)[len(ms)-1], id)
		}
	}
	// The previous release alone: tasks start on its rules.
	for range 4 {
		round(ids)
	}
	// This build joins: both serve, new tasks start on either.
	stopNew := h.runWorker(h.workerConfig())
	ids = append(ids, "mixed-3", "mixed-4-budget")
	for range 8 {
		round(ids)
	}
	// The previous release stops for a moment; a task starts on this
	// build's rules. Then the previous release is back and this build's
	// worker away: the previous release alone meets that task's history,
	// of rules it does not know, and fails its workflow task (retried),
	// never the task. This build's worker comes back and answers it.
	require.NoError(t, old.Process.Signal(os.Interrupt))
	_ = old.Wait()
	newer := "mixed-newer-rules"
	round([]string{newer})
	old2 := startPreviousWorker(t, h)
	stopNew()
	turns[newer]++
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), newer, "", "input", text(fmt.Sprintf("%s q%d", newer, turns[newer]))))
	var failure string
	eventually(t, time.Minute, "the previous release to fail a workflow task of the newer rules", func() bool {
		for _, e := range history(t, newer, "") {
			if a := e.GetWorkflowTaskFailedEventAttributes(); a != nil {
				failure = a.GetFailure().GetMessage()
				return true
			}
			require.NotEqual(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, e.GetEventType(), "the task failed")
		}
		return false
	})
	t.Logf("the previous release's workflow-task failure: %s", failure)
	h.startWorker()
	waitOutputsWithin(t, newer, turns[newer], 3*time.Minute)
	ids = append(ids, newer)
	// The previous release stops for good: this build alone replays and
	// continues what the previous one started.
	require.NoError(t, old2.Process.Signal(os.Interrupt))
	_ = old2.Wait()
	for range 4 {
		round(ids)
	}
	for _, id := range ids {
		st := status(t, id)
		require.NotEqual(t, contract.StateFailed, st.State, "%s: %+v", id, st.Error)
		if id != newer {
			require.GreaterOrEqual(t, st.Run, 2, "%s continued as new along the way", id)
		}
		require.Len(t, messages(t, id, nil), 2*turns[id], id)
	}
	byPid, wftFailed := servedBy(t, ids)
	t.Logf("workflow tasks completed by pid: %v (previous release: %d and %d, this build: %d); workflow tasks failed: %d", byPid, old.Process.Pid, old2.Process.Pid, os.Getpid(), wftFailed)
	require.Positive(t, byPid[fmt.Sprint(old.Process.Pid)], "the previous release's worker served workflow tasks")
	require.Positive(t, wftFailed, "the previous release failed workflow tasks of newer rules")
	require.Positive(t, byPid[fmt.Sprint(os.Getpid())], "this build's worker served workflow tasks")
	for _, id := range []string{"mixed-budget", "mixed-4-budget"} {
		budget := status(t, id).Budget
		require.NotNil(t, budget, "%s: the budget survived every build and continue-as-new", id)
		require.Positive(t, budget.Used.InputTokens)
	}
	for _, id := range ids {
		closeAndWait(t, id)
	}
}

// A rollback across a continue-as-new: a budgeted conversation started on
// this build (pinned to it) continues as new after the deployment was
// rolled back to the previous release, whose worker then reads the state
// this build carried (the budget, the window hint, the queue) and keeps
// answering, the budget still charged.
func TestRollbackAcrossContinueAsNewKeepsAnswering(t *testing.T) {
	h := newHarness(t)
	h.model.SetHandler(echoLast)
	dep := fmt.Sprintf("it-rollback-%d", queueSeq.Add(1))
	d := starter.NewDeployment(sdk, dep)
	startPreviousWorker(t, h, workerkit.EnvDeploymentName+"="+dep, workerkit.EnvBuildID+"=previous")
	cfg := h.workerConfig()
	cfg.Deployment = workerkit.Deployment{Name: dep, BuildID: "current"}
	h.runWorker(cfg)
	setCurrent(t, d, "current")

	id := dep + "-task"
	startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("q1"), "continueAsNewEvents": 100,
		"budget": map[string]any{"inputTokens": 1_000_000, "outputTokens": 1_000_000}})
	waitOutputs(t, id, 1)
	requirePinned(t, id, "current")
	firstRun := describeRun(t, id)

	setCurrent(t, d, "previous") // the rollback
	turns := 1
	talk := func() {
		t.Helper()
		turns++
		require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text(fmt.Sprint("q", turns))))
		waitOutputsWithin(t, id, turns, 2*time.Minute)
		ms := messages(t, id, nil)
		require.Equal(t, fmt.Sprint("echo: q", turns), texts(ms)[len(ms)-1])
	}
	for status(t, id).Run < 2 {
		require.Less(t, turns, 30, "no continue-as-new after 30 turns")
		talk()
	}
	requirePinned(t, id, "previous")
	before := status(t, id).Budget
	for range 3 {
		talk()
	}
	st := status(t, id)
	require.NotEqual(t, contract.StateFailed, st.State, "%+v", st.Error)
	require.NotNil(t, st.Budget, "the previous release read the carried budget")
	require.Greater(t, st.Budget.Used.InputTokens, before.Used.InputTokens, "and charges it")
	require.Len(t, messages(t, id, nil), 2*turns, "every turn of both runs listed")
	events := history(t, id, firstRun)
	require.NotNil(t, events[len(events)-1].GetWorkflowExecutionContinuedAsNewEventAttributes())
	for _, e := range history(t, id, "") {
		require.NotEqual(t, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, e.GetEventType(), "%v", e.GetWorkflowTaskFailedEventAttributes())
	}
	closeAndWait(t, id)
}
