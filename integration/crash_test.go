package integration

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

var (
	workerBinOnce sync.Once
	workerBin     string
	workerBinErr  error
)

// workerBinary is the real worker binary, built once per test run.
func workerBinary(t *testing.T) string {
	t.Helper()
	workerBinOnce.Do(func() {
		if p := os.Getenv("AGENT_WORKER_BIN"); p != "" {
			workerBin = p
			return
		}
		workerBin = filepath.Join(workDir, "worker")
		workerBinErr = goBuild(workerBin, "./cmd/worker")
	})
	require.NoError(t, workerBinErr)
	return workerBin
}

func startWorkerProcess(t *testing.T, h *harness) *exec.Cmd {
	t.Helper()
	return startWorkerProcessLogging(t, h, os.Stderr)
}

// startWorkerProcessLogging runs the worker binary with its logs (debug level) going to logs.
func startWorkerProcessLogging(t *testing.T, h *harness, logs io.Writer) *exec.Cmd {
	t.Helper()
	env := h.workerEnv()
	if logs != os.Stderr {
		env = append(env, "AGENT_LOG_LEVEL=debug")
	}
	return startProcess(t, workerBinary(t), env, logs)
}

// startProcess runs bin with env, its output going to logs, killed when
// the test ends unless it was waited for.
func startProcess(t *testing.T, bin string, env []string, logs io.Writer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// A worker process is SIGKILLed in the middle of a model call; the task
// finishes on a new worker with no input lost and none answered twice.
func TestWorkerKilledMidTurnTaskFinishesOnAnother(t *testing.T) {
	h := newHarness(t)
	first := startWorkerProcess(t, h)
	id := "crash"
	run := startTask(t, h, id, map[string]any{"agent": agent("a"), "input": text("one")})
	waitOutputs(t, id, 1)

	h.model.Hold()
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("two")))
	require.NoError(t, h.model.WaitForCalls(ctxT(t, time.Minute), 2))
	require.Equal(t, contract.StateWorking, status(t, id).State)

	require.NoError(t, first.Process.Kill()) // SIGKILL
	_ = first.Wait()
	// Sent while no worker runs: received when a worker next takes delivery.
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("three")))
	h.model.Release()

	startWorkerProcess(t, h)
	waitOutputsWithin(t, id, 3, 3*time.Minute) // the held call ends by its 30 s heartbeat timeout first
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	var res contract.Result
	require.NoError(t, run.Get(ctxT(t, 60*time.Second), &res))

	msgs := messages(t, id, nil)
	requireSeedOrder(t, msgs)
	seen := map[string]int{}
	outputs := 0
	for _, m := range msgs {
		txt := *m.Message[0].Text
		if m.Type == contract.TypeInput {
			seen[txt]++
		} else {
			outputs++
			require.Equal(t, 1, strings.Count(txt, "echo:"), "one answer per output")
		}
	}
	require.Equal(t, map[string]int{"one": 1, "two": 1, "three": 1}, seen, "no input lost or duplicated")
	require.Equal(t, res.Turns, outputs, "every turn answered exactly once")
	require.Equal(t, 3, outputs)
	// The killed call was retried on the new worker: more model calls than turns.
	require.Greater(t, h.model.CallCount(), outputs)
	recordHistory(t, id, run.GetRunID(), "worker-killed-mid-turn")
}
