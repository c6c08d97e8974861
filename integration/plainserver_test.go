package integration

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

// On a namespace where nobody registered the runtime's search attributes
// (a team's existing Temporal server), the server refuses a start that sets
// them: the Go client and the Tasks API both start the task without them,
// and it answers.
func TestStartsOnANamespaceWithoutTheSearchAttributes(t *testing.T) {
	h := newHarness(t)
	ns := "it-plain-" + time.Now().UTC().Format("150405.000000")
	_, err := sdk.WorkflowService().RegisterNamespace(ctxT(t, 30*time.Second), &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	require.NoError(t, err)
	nc, err := client.NewClientFromExisting(sdk, client.Options{Namespace: ns, Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	// A new namespace reaches the frontend's cache in a few seconds.
	eventually(t, time.Minute, "the namespace in service", func() bool {
		_, err := nc.WorkflowService().ListWorkflowExecutions(ctxT(t, 5*time.Second), &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns})
		return err == nil
	})

	h.runWorkerOn(nc, ns, h.workerConfig())

	// The server's refusal is the one the clients recognise.
	_, err = nc.ExecuteWorkflow(ctxT(t, 30*time.Second), client.StartWorkflowOptions{
		TaskQueue: h.queue, TypedSearchAttributes: starter.SearchAttributes(contract.AgentSpec{Name: "a", Model: "test/echo"}),
	}, contract.WorkflowType, map[string]any{"agent": agent("a")})
	require.Error(t, err)
	require.True(t, starter.SearchAttributesRefused(err), "%v", err)

	tasks := starter.New(nc, h.queue)
	id, err := tasks.Start(ctxT(t, 30*time.Second), contract.StartArgs{
		Agent: contract.AgentSpec{Name: "a", Model: "test/echo"}, Input: &contract.TaskIO{Message: contract.TextParts("hello")},
	}, starter.StartOptions{})
	require.NoError(t, err)
	eventually(t, time.Minute, "the Go client's task answers", func() bool {
		v, err := nc.QueryWorkflow(ctxT(t, 10*time.Second), id, "", contract.QueryStatus)
		var st contract.Status
		return err == nil && v.Get(&st) == nil && st.Outputs == 1
	})

	api := newAPIOn(t, h, ns)
	createSeedTask(t, api, seedTask())
	r := api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "Hello", "variables": map[string]any{"customer": "Amina"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, "echo: Hello", r.data()["text"])
	_, err = nc.DescribeWorkflowExecution(ctxT(t, 10*time.Second), r.Header.Get("X-Request-Id"), "")
	require.NoError(t, err, "the run is on the plain namespace")
	var nf *serviceerror.NotFound
	_, err = sdk.DescribeWorkflowExecution(ctxT(t, 10*time.Second), r.Header.Get("X-Request-Id"), "")
	require.True(t, errors.As(err, &nf), "and not on the shared one: %v", err)
}
