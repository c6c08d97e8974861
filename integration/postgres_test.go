//go:build postgres

// Built only by `make test-postgres` (-tags postgres), which runs the shared
// server on PostgreSQL (AGENTDEV_DB): the restart below needs a database
// that outlives the server process.

package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/workerkit"
)

// The server process stops while one task's turn waits on the model with an
// input queued behind it and another task waits idle; it starts again on
// the same database. Both tasks finish with every input answered once,
// and visibility (list queries by the project's search attributes) still
// finds them.
func TestPostgresServerRestartWithTasksInFlight(t *testing.T) {
	require.True(t, strings.HasPrefix(os.Getenv(EnvDB), "postgres"), "make test-postgres sets %s to a postgres:// URL", EnvDB)
	h := newHarness(t)
	h.startWorker() // in this process: it rides out the restart, as a worker on another host would
	suffix := fmt.Sprint(time.Now().UnixNano())
	busy, idle := "restart-busy-"+suffix, "restart-idle-"+suffix
	agentName := "restart-agent-" + suffix
	start := func(id, input string) client.WorkflowRun {
		run, err := sdk.ExecuteWorkflow(ctxT(t, 10*time.Second), client.StartWorkflowOptions{
			ID: id, TaskQueue: h.queue,
			TypedSearchAttributes: temporal.NewSearchAttributes(
				temporal.NewSearchAttributeKeyKeyword(contract.SearchAttributeAgentName).ValueSet(agentName)),
		}, "AgentTask", map[string]any{"agent": agent(agentName), "input": text(input)})
		require.NoError(t, err)
		return run
	}
	runBusy, runIdle := start(busy, "one"), start(idle, "idle one")
	waitOutputs(t, busy, 1)
	waitOutputs(t, idle, 1)

	// Mid-turn: the model holds the second call; a third input is queued.
	h.model.Hold()
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), busy, "", "input", text("two")))
	require.NoError(t, h.model.WaitForCalls(ctxT(t, time.Minute), 3))
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), busy, "", "input", text("three")))
	eventually(t, time.Minute, "the third input queued", func() bool { return status(t, busy).Queued == 1 })
	require.Equal(t, contract.StateWorking, status(t, busy).State)

	restartSharedServer(t)

	// The held call finishes into the new server process.
	h.model.Release()
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 30*time.Second), idle, "", "input", text("idle two")))
	waitOutputs(t, busy, 3)
	waitOutputs(t, idle, 2)

	for _, c := range []struct {
		id     string
		inputs []string
	}{
		{busy, []string{"one", "two", "three"}},
		{idle, []string{"idle one", "idle two"}},
	} {
		require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), c.id, "", "close", nil))
		msgs := messages(t, c.id, nil)
		requireSeedOrder(t, msgs)
		var inputs []string
		outputs := 0
		for _, m := range msgs {
			txt := *m.Message[0].Text
			if m.Type == contract.TypeInput {
				inputs = append(inputs, txt)
			} else {
				outputs++
				require.Equal(t, 1, strings.Count(txt, "echo:"), "one answer per output")
			}
		}
		require.Equal(t, c.inputs, inputs, "%s: no input lost or duplicated", c.id)
		require.Equal(t, len(c.inputs), outputs, "%s: every input answered once", c.id)
	}
	var res contract.Result
	require.NoError(t, runBusy.Get(ctxT(t, 60*time.Second), &res))
	require.Equal(t, 3, res.Turns)
	require.NoError(t, runIdle.Get(ctxT(t, 60*time.Second), &res))
	require.Equal(t, 2, res.Turns)

	// Visibility on PostgreSQL: both tasks listed by their agent, closed.
	eventually(t, 30*time.Second, "both tasks listed by AgentName as completed", func() bool {
		list, err := sdk.ListWorkflow(ctxT(t, 5*time.Second), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: temporalNS,
			Query:     fmt.Sprintf(`AgentName = %q AND ExecutionStatus = "Completed"`, agentName),
		})
		return err == nil && len(list.GetExecutions()) == 2
	})
}

// restartSharedServer stops the shared agentdev server (SIGTERM) and starts
// it again with the same flags and database, on the same frontend, UI and
// broker ports, so every client and worker of the test run reconnects to it.
func restartSharedServer(t *testing.T) {
	t.Helper()
	stopProcess(serverCmd)
	ports := map[string]string{"--port": portOf(t, temporalAddr), "--ui-port": portOf(t, temporalUI), "--nats-port": portOf(t, natsURL)}
	args := append([]string(nil), serverArgs...)
	for i := 0; i+1 < len(args); i++ {
		if p, ok := ports[args[i]]; ok {
			args[i+1] = p
		}
	}
	cmd, f, err := runAgentdevServer(args...)
	require.NoError(t, err, "restarting the server")
	serverCmd = cmd
	require.Equal(t, temporalAddr, f[1])
}

// portOf is the port of a host:port or of a URL.
func portOf(t *testing.T, addr string) string {
	t.Helper()
	if u, err := url.Parse(addr); err == nil && u.Port() != "" {
		return u.Port()
	}
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err, addr)
	return port
}

// With codec keys, PostgreSQL holds no text of a task: a dump of both of
// the server's databases (executions and visibility) has the encrypted
// task's texts neither as text nor as the hex of a bytea column, while a
// task run without keys beside it is found there (so the search reads what
// is stored).
func TestPostgresHoldsNoPlaintextWithCodecKeys(t *testing.T) {
	dbURL := os.Getenv(EnvDB)
	require.True(t, strings.HasPrefix(dbURL, "postgres"), "make test-postgres sets %s to a postgres:// URL", EnvDB)
	c1, err := codec.New(codec.Keys{"k1": randomKey(t)}, "k1")
	require.NoError(t, err)
	o := client.Options{HostPort: temporalAddr, Namespace: temporalNS, Logger: quietLogger()}
	c1.Apply(&o)
	enc, err := client.Dial(o)
	require.NoError(t, err)
	t.Cleanup(enc.Close)

	h := newHarness(t)
	cfg := h.workerConfig()
	cfg.Codec = c1
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- workerkit.Run(ctx, cfg, enc) }()
	t.Cleanup(func() { stop(); require.NoError(t, <-done) })

	mark := base64.RawURLEncoding.EncodeToString(randomKey(t)[:9])
	secret, clear := "okapi-secret-"+mark, "okapi-clear-"+mark
	id := "pg-codec-" + mark
	_, err = enc.ExecuteWorkflow(ctxT(t, 10*time.Second), client.StartWorkflowOptions{ID: id, TaskQueue: h.queue}, "AgentTask",
		map[string]any{"agent": agent("codec"), "input": text(secret)})
	require.NoError(t, err)
	waitOutputsWith(t, enc, id, 1)
	require.Contains(t, messageTexts(t, enc, id), "echo: "+secret)

	// The control: a task without keys, on a worker of its own queue.
	h2 := newHarness(t)
	h2.startWorker()
	startTask(t, h2, "pg-clear-"+mark, map[string]any{"agent": agent("plain"), "input": text(clear)})
	waitOutputs(t, "pg-clear-"+mark, 1)

	var dump []byte
	for _, db := range []string{dbURL, dbURL + "_visibility"} {
		out, err := exec.Command("pg_dump", "--data-only", "--dbname="+db).Output()
		require.NoError(t, err, "pg_dump %s", db)
		dump = append(dump, out...)
	}
	asStored := func(s string) [][]byte { return [][]byte{[]byte(s), []byte(hex.EncodeToString([]byte(s)))} }
	found := false
	for _, b := range asStored(clear) {
		found = found || bytes.Contains(dump, b)
	}
	require.True(t, found, "the unencrypted task's text %q is not in the %d-byte dump: the search reads nothing stored", clear, len(dump))
	for _, b := range asStored(secret) {
		require.False(t, bytes.Contains(dump, b), "the database holds the encrypted task's text (%q)", b)
	}
	require.True(t, bytes.Contains(dump, []byte(id)), "the encrypted task is in the dump")
}
