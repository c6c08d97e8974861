package integration

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

// The embedded stack: the Web UI is served, the project's search attributes
// are registered, and the starter sets them so tasks can be listed by agent.
func TestEmbeddedServerServesTheUIAndSearchAttributes(t *testing.T) {
	resp, err := http.Get(temporalUI + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, strings.ToLower(string(body)), "<html")
	resp, err = http.Get(temporalUI + "/api/v1/namespaces")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the UI's API reaches the frontend")

	sa, err := sdk.OperatorService().ListSearchAttributes(ctxT(t, 10*time.Second), &operatorservice.ListSearchAttributesRequest{Namespace: temporalNS})
	require.NoError(t, err)
	for _, name := range []string{contract.SearchAttributeAgentName, contract.SearchAttributeAgentModel} {
		require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, sa.GetCustomAttributes()[name], name)
	}

	h := newHarness(t)
	h.startWorker()
	id, err := h.tasks.Start(ctxT(t, 10*time.Second), contract.StartArgs{
		Agent: contract.AgentSpec{Name: "listed-agent", Model: "test/echo"},
		Input: &contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("hi")}},
		Mode:  contract.ModeSingle,
	}, starter.StartOptions{})
	require.NoError(t, err)
	_, err = h.tasks.Result(ctxT(t, 30*time.Second), id)
	require.NoError(t, err)
	eventually(t, time.Minute, "the task listed by AgentName", func() bool {
		res, err := sdk.ListWorkflow(ctxT(t, 5*time.Second), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: temporalNS, Query: `AgentName = "listed-agent"`,
		})
		return err == nil && len(res.GetExecutions()) == 1 && res.GetExecutions()[0].GetExecution().GetWorkflowId() == id
	})
}

// With a database file, tasks survive a restart of the server.
func TestTasksSurviveAServerRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "temporal.db")
	cmd, f, err := runAgentdevServer("--db", db, "--port", "0", "--ui-port", "-1", "--nats-port", "-1", "--log-level", "error")
	require.NoError(t, err)
	c, err := client.Dial(client.Options{HostPort: f[1], Logger: quietLogger()})
	require.NoError(t, err)
	run, err := c.ExecuteWorkflow(ctxT(t, 10*time.Second), client.StartWorkflowOptions{ID: "survivor", TaskQueue: "nobody-serves-this"},
		"AgentTask", map[string]any{"agent": agent("a")})
	require.NoError(t, err)
	c.Close()
	stopProcess(cmd)

	cmd, f, err = runAgentdevServer("--db", db, "--port", "0", "--ui-port", "-1", "--nats-port", "-1", "--log-level", "error")
	require.NoError(t, err)
	defer stopProcess(cmd)
	c, err = client.Dial(client.Options{HostPort: f[1], Logger: quietLogger()})
	require.NoError(t, err)
	defer c.Close()
	d, err := c.DescribeWorkflowExecution(ctxT(t, 10*time.Second), "survivor", "")
	require.NoError(t, err)
	require.Equal(t, run.GetRunID(), d.GetWorkflowExecutionInfo().GetExecution().GetRunId())
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())
}
