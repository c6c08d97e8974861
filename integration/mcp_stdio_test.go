package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/mcp"
	"github.com/agenttask/agenttask/internal/mcp/mcptest"
)

// everythingPIDs are the processes of the MCP reference server running
// over stdio from dir.
func everythingPIDs(t *testing.T, script string) []string {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", script+" stdio").Output()
	return strings.Fields(string(out))
}

// A worker runs the MCP project's reference server (server-everything,
// from npm) over stdio beside an HTTP server, both in one conversation:
// the stdio server sees only the environment its entry names, writes its
// stderr to the worker's log under its name, is started again after it
// dies, and stops with the worker.
func TestMCPStdioServerBesideAnHTTPOne(t *testing.T) {
	h := newHarness(t)
	h.model.SetHandler(mcpModel)
	script, err := filepath.Abs(filepath.Join("mcpeverything", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	require.NoError(t, err)
	_, err = os.Stat(script)
	require.NoError(t, err, "server-everything is not installed: make test-deps runs npm ci in integration/mcpeverything")
	node, err := exec.LookPath("node")
	require.NoError(t, err)
	web := mcptest.New(t)
	servers := jsonOf(map[string]any{
		"everything": map[string]any{"command": node, "args": []string{script, "stdio"}, "env": map[string]string{"GREETING": "hello from the entry"}},
		"web":        map[string]any{"url": web.URL()},
	})
	var logs syncBuffer
	env := append(h.workerEnv(), mcp.EnvServers+"="+servers, "AGENT_SECRET_OF_THE_WORKER=do-not-pass", "AGENT_LOG_LEVEL=info")
	worker := startProcess(t, workerBinary(t), env, &logs)

	a := agent("a")
	a["capabilities"] = []any{
		map[string]any{"name": "everything", "kind": "mcp", "server": "everything", "tools": []string{"get-env", "echo"}, "autoApprove": []string{"*"}},
		map[string]any{"name": "web", "kind": "mcp", "server": "web", "tools": []string{mcptest.ToolEcho}},
	}
	id := "mcp-stdio"
	startTask(t, h, id, map[string]any{"agent": a, "input": text(`call everything__get-env {}; call web__echo {"message": "over http"}`)})
	waitOutputsWithin(t, id, 1, 2*time.Minute)
	answer := lastText(t, id)
	require.Contains(t, answer, "hello from the entry", "the entry's environment reached the server")
	require.NotContains(t, answer, "do-not-pass", "nothing of the worker's environment reached it")
	require.NotContains(t, answer, "TEMPORAL_ADDRESS")
	require.Contains(t, answer, "Echo: over http", "the HTTP server answered in the same turn")
	require.Equal(t, 1, web.Calls(mcptest.ToolEcho))
	eventually(t, 10*time.Second, "the server's stderr in the worker's log under its name", func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "MCP server stderr") && strings.Contains(line, `"server": "everything"`) && strings.Contains(line, "Starting default (STDIO) server") {
				return true
			}
		}
		return false
	})

	// The server dies; the next call starts it again.
	pids := everythingPIDs(t, script)
	require.Len(t, pids, 1)
	require.NoError(t, exec.Command("kill", "-9", pids[0]).Run())
	_, err = sendUpdate(t, id, text(`call everything__echo {"message": "again"}`))
	require.NoError(t, err)
	waitOutputsWithin(t, id, 2, 2*time.Minute)
	require.Contains(t, lastText(t, id), "Echo: again")
	restarted := everythingPIDs(t, script)
	require.Len(t, restarted, 1)
	require.NotEqual(t, pids[0], restarted[0])

	// The worker stops; its server stops with it.
	require.NoError(t, worker.Process.Signal(syscall.SIGTERM))
	_ = worker.Wait()
	eventually(t, 15*time.Second, "the stdio server stopped with the worker", func() bool { return len(everythingPIDs(t, script)) == 0 })
}
