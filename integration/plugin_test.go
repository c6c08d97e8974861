package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/examples/support"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/plugin"
	"github.com/agenttask/agenttask/worker"
)

// envOf is a getenv over env's KEY=VALUE lines, the last one winning.
func envOf(env []string) func(string) string {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) string { return m[k] }
}

// supportModel plays both agents of the support sample over real HTTP: the
// triage agent calls lookup_customer, then reads the plan; the shaping
// pass answers the Triage JSON from what the conversation says; the reply
// agent answers each input.
func supportModel(c testmodel.Call) testmodel.Reply {
	last := c.Messages[len(c.Messages)-1]
	all := ""
	for _, m := range c.Messages {
		all += m.Content + "\n"
	}
	switch {
	case c.JSONSchema != nil:
		t := support.Triage{Priority: "normal", Team: "technical"}
		if strings.Contains(all, "enterprise") {
			t = support.Triage{Priority: "urgent", Team: "billing"}
		}
		b, _ := json.Marshal(t)
		return testmodel.Reply{Text: string(b)}
	case last.Role == "tool":
		return testmodel.Reply{Text: "The customer record says: " + last.Content}
	case containsName(c.Tools, "lookup_customer"):
		return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "call_0", Name: "lookup_customer", Arguments: `{"customer_id":"ent-42"}`}}}
	default:
		return testmodel.Reply{Text: "reply: " + last.Content}
	}
}

func containsName(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// A team's worker process, built by the sample's own code, hosts its
// workflow, its activity used as a tool and AgentTask through the plugin
// alone (on the client and the worker, as the sample's main does); the
// workflow decodes the shaped result into its Go struct and gets a
// follow-up answered.
func TestPluginHostsTeamWorkflow(t *testing.T) {
	h := newHarness(t)
	h.model.SetHandler(supportModel)
	// The team's configuration, read as its own main reads it: through the
	// public worker package, from the environment the harness's workers get.
	cfg, err := worker.ConfigFromEnv(envOf(h.workerEnv()))
	require.NoError(t, err)
	cfg.OutputModel = "test/shape"
	cfg.BrokerURL = natsURL
	p, err := plugin.New(cfg)
	require.NoError(t, err)
	c, err := client.NewClientFromExisting(sdk, client.Options{Namespace: temporalNS, Logger: quietLogger(), Plugins: []client.Plugin{p}})
	require.NoError(t, err)
	defer c.Close()
	w := &support.Workflows{Model: "test/model"} // one worker: LookupCustomer on the task's own queue
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, c, p, h.queue) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	run, err := sdk.ExecuteWorkflow(ctxT(t, 10*time.Second), client.StartWorkflowOptions{ID: "support-t1", TaskQueue: h.queue},
		support.WorkflowName, support.Ticket{ID: "T-1", CustomerID: "ent-42", Subject: "Charged twice", Body: "My invoice came twice."})
	require.NoError(t, err)
	var out support.Outcome
	require.NoError(t, run.Get(ctxT(t, 2*time.Minute), &out))

	require.Equal(t, support.Triage{Priority: "urgent", Team: "billing"}, out.Triage)
	require.Equal(t, "reply: Draft the reply: the ticket is urgent priority and goes to the billing team.", out.Reply)
	require.True(t, strings.HasPrefix(out.TriageTaskID, "support-t1.triage."), out.TriageTaskID)
	require.Positive(t, out.Usage.InputTokens)
	// LookupCustomer ran on the team's queue and its JSON reached the model.
	var toolResult string
	for _, call := range h.model.Calls() {
		for _, m := range call.Messages {
			if m.Role == "tool" {
				toolResult = m.Content
			}
		}
	}
	require.Contains(t, toolResult, `"plan":"enterprise"`)
	require.Equal(t, 1, activityRuns(t, out.TriageTaskID, support.LookupCustomerName))
	require.Equal(t, 1, activityRuns(t, "support-t1", "agenttask.Ask"))
	st := status(t, out.ReplyTaskID)
	require.Equal(t, "completed", string(st.State), "the conversation was closed")
	require.Equal(t, 2, st.Outputs)
}
