package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// structuredLine is a line of the structured log (zap's console encoding:
// an ISO 8601 instant, a tab, the level).
var structuredLine = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.\d]*Z?\t(DEBUG|INFO|WARN|ERROR|DPANIC|PANIC|FATAL)\t`)

// syncBuffer is a bytes.Buffer safe for a process's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// `make run` (agentdev run) as a newcomer sees it: the banner with every
// address, the keys and the mounts, the demo conversation as a person
// reads it, one short line per turn, and no structured log line; those go
// to a file under the data folder, whose path the banner prints.
func TestMakeRunConsoleIsForPeople(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(agentdevBinary(t), "run", "--data", dir, "--port", "0", "--ui-port", "0", "--nats-port", "0")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "AGENT_") && !strings.HasPrefix(kv, "API_KEYS=") && !strings.HasPrefix(kv, "DEVELOPER_KEYS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AGENT_API_ADDR="+freeAddr(t))
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { stopProcess(cmd) })
	eventually(t, 2*time.Minute, "the demo conversation and the serving line", func() bool {
		return strings.Contains(stdout.String(), "Press Ctrl-C to stop.")
	})
	time.Sleep(500 * time.Millisecond) // anything a worker would log after the demo
	out, errOut := stdout.String(), stderr.String()
	if d := os.Getenv(EnvScreenshots); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "make-run-console.txt"), []byte(out), 0o644))
	}
	t.Logf("the console:\n%s", out)

	for _, want := range []string{
		"Temporal frontend: 127.0.0.1:", "Temporal Web UI:   http://", "Tasks API:         http://", "Chat page:         http://", "Tasks API keys:    developer dev-",
		"Agents' mounts: {\"files\":", "Broker (NATS):     nats://", "Logs:              " + filepath.Join(dir, "agentdev.log"),
		// The demo conversation, who said what, when received and committed.
		"the conversation as a person reads it", "  you {\"customer\":\"Amina\"} · received ", " · committed ",
		"    Hello! What can a durable agent task do?", "  demo-assistant {\"topic\":", "    And if the worker crashes halfway?",
		// One line per turn.
		" · turn 1 · answered (end)", " · turn 2 · answered (end)",
	} {
		require.Contains(t, out, want)
	}
	require.NotRegexp(t, structuredLine, out, "no structured log line on stdout")
	require.NotRegexp(t, structuredLine, errOut, "no structured log line on stderr")
	require.NotContains(t, out+errOut, "WorkflowID", "no log fields on the console")

	// They are in the file.
	logs, err := os.ReadFile(filepath.Join(dir, "agentdev.log"))
	require.NoError(t, err)
	require.Regexp(t, structuredLine, string(logs))
	require.Contains(t, string(logs), "turn started")
}
