package integration

import (
	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mount"

	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	starterOnce sync.Once
	starterBin  string
	starterErr  error
)

// cli runs the starter binary against the shared server and the harness's
// task queue; it returns stdout, stderr and the exit code.
func cli(t *testing.T, h *harness, args ...string) (string, string, int) {
	t.Helper()
	starterOnce.Do(func() {
		if starterBin = os.Getenv("AGENT_STARTER_BIN"); starterBin == "" {
			starterBin = filepath.Join(workDir, "starter")
			starterErr = goBuild(starterBin, "./cmd/starter")
		}
	})
	require.NoError(t, starterErr)
	cmd := exec.Command(starterBin, append([]string{"--address", temporalAddr, "--task-queue", h.queue}, args...)...)
	cmd.Env = append(os.Environ(), mount.EnvMounts+"="+jsonOf(h.mounts)) // the workers' list
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code
}

func TestStarterCLIEndToEnd(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	out, stderr, code := cli(t, h, "start", "--agent", `{"name":"cli","model":"test/echo"}`, "--input", "hello", "--task-id", "cli-task")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, `{"task_id":"cli-task"}`, out)
	waitOutputs(t, "cli-task", 1)

	out, stderr, code = cli(t, h, "send", "cli-task", "again")
	require.Equal(t, 0, code, stderr)
	var sent contract.SendResult
	require.NoError(t, json.Unmarshal([]byte(out), &sent))
	mustTime(t, sent.ReceivedAt)
	waitOutputs(t, "cli-task", 2)

	out, _, code = cli(t, h, "status", "cli-task")
	require.Equal(t, 0, code)
	var st contract.Status
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, 2, st.Outputs)

	out, _, code = cli(t, h, "messages", "cli-task", "--after", "2", "--limit", "1")
	require.Equal(t, 0, code)
	var page []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Len(t, page, 1)
	require.Equal(t, "input", page[0]["type"])

	_, stderr, code = cli(t, h, "send", "cli-task", "--json", `{"message":[{"mimeType":"text/plain","text":"x"}],"received_at":"2026-01-01T00:00:00Z"}`)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, `"INVALID_INPUT"`)

	_, stderr, code = cli(t, h, "status", "no-such-task")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, `"TASK_NOT_FOUND"`)

	_, stderr, code = cli(t, h, "start", "--agent", `{"name":"Bad Name","model":"test/echo"}`)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, `"INVALID_INPUT"`)

	_, _, code = cli(t, h, "cancel-turn", "cli-task")
	require.Equal(t, 0, code)
	_, _, code = cli(t, h, "close", "cli-task")
	require.Equal(t, 0, code)
	out, stderr, code = cli(t, h, "result", "cli-task")
	require.Equal(t, 0, code, stderr)
	var res contract.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, contract.StateCompleted, res.State)
	require.Equal(t, 2, res.Turns)

	_, _, code = cli(t, h, "frobnicate")
	require.Equal(t, 2, code)
}
