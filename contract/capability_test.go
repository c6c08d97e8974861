package contract

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// capAgent is an agent with the one capability given as JSON.
func capAgent(t *testing.T, capability string) (*Agent, error) {
	t.Helper()
	var c Capability
	require.NoError(t, json.Unmarshal([]byte(capability), &c), capability)
	return CheckAgent("agent", AgentSpec{Name: "shop", Model: "demo/offline", Capabilities: []Capability{c}})
}

func TestActivityCapabilityAccepted(t *testing.T) {
	a, err := capAgent(t, `{"name": "refund", "kind": "activity", "activity": "IssueRefund", "taskQueue": "payments",
		"description": "Refund an order.",
		"parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}, "required": ["order_id", "amount"], "additionalProperties": false},
		"startToCloseTimeout": "2m", "retry": {"initialInterval": "500ms", "maximumAttempts": 3},
		"approvalCondition": "args.amount > 100", "approvalTimeout": "1h"}`)
	require.NoError(t, err)
	c := a.Spec.Capabilities[0]
	require.Equal(t, 2*time.Minute, c.Timeout())
	require.Equal(t, time.Hour, c.ApprovalWait())
	require.False(t, c.NeedsApprovalAlways())
	require.True(t, c.MayNeedApproval())
	require.Equal(t, RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 3}, c.RetryPolicy())

	require.NotNil(t, a.CapabilityParams["refund"])
	require.Nil(t, a.CheckCapabilityArgs("refund", json.RawMessage(`{"order_id": "A1", "amount": 12.5}`)))
	vs := a.CheckCapabilityArgs("refund", json.RawMessage(`{"order_id": 7, "amount": 1, "extra": true}`))
	require.NotEmpty(t, vs)
	require.Equal(t, "/", vs[0].Path) // the extra key, then the wrong type, sorted by path
	require.Equal(t, "/order_id", vs[len(vs)-1].Path)
	vs = a.CheckCapabilityArgs("refund", json.RawMessage(`{}`))
	require.Len(t, vs, 1)
	require.Contains(t, vs[0].Message, "missing properties")
	require.Equal(t, []Violation{{Path: "/", Message: "the arguments must be one JSON object"}}, a.CheckCapabilityArgs("refund", json.RawMessage(`[1]`)))
	require.Equal(t, []Violation{{Path: "/", Message: "the arguments must be one JSON object"}}, a.CheckCapabilityArgs("refund", json.RawMessage(`null`)))
}

func TestActivityCapabilityDefaults(t *testing.T) {
	a, err := capAgent(t, `{"name": "lookup", "kind": "activity", "activity": "LookupOrder"}`)
	require.NoError(t, err)
	c := a.Spec.Capabilities[0]
	require.Equal(t, 30*time.Second, c.Timeout())
	require.Equal(t, time.Duration(0), c.ApprovalWait())
	require.False(t, c.MayNeedApproval())
	require.Equal(t, RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5}, c.RetryPolicy())
	require.JSONEq(t, `{"type":"object"}`, string(c.ToolParameters()))
	// Any object fits the default schema; anything else does not.
	require.Nil(t, a.CheckCapabilityArgs("lookup", json.RawMessage(`{"x": [1, {"y": null}]}`)))
	require.Nil(t, a.CheckCapabilityArgs("lookup", nil))
	require.NotNil(t, a.CheckCapabilityArgs("lookup", json.RawMessage(`"x"`)))
	// An initial interval past the default maximum raises the maximum.
	p := (&CapabilityRetry{InitialInterval: "2m"}).Policy()
	require.Equal(t, 2*time.Minute, p.MaximumInterval)
	// The spec stays as it was written: no new key appears when unused.
	b, err := json.Marshal(Capability{Name: "x", Kind: CapabilityDelegate, Agent: &AgentSpec{Name: "a", Model: "p/m"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"x","kind":"delegate","agent":{"name":"a","model":"p/m"}}`, string(b))
}

func TestDelegateCapabilityApproval(t *testing.T) {
	a, err := capAgent(t, `{"name": "paint", "kind": "delegate", "approval": "always", "approvalTimeout": "10m", "agent": {"name": "painter", "model": "demo/offline"}}`)
	require.NoError(t, err)
	c := a.Spec.Capabilities[0]
	require.True(t, c.NeedsApprovalAlways())
	require.Equal(t, 10*time.Minute, c.ApprovalWait())
	require.Nil(t, a.CapabilityParams["paint"])
	_, err = capAgent(t, `{"name": "paint", "kind": "delegate", "approval": "never", "agent": {"name": "painter", "model": "demo/offline"}}`)
	require.NoError(t, err)
}

// A client capability's arguments are checked against its parameters,
// and every call of it may wait (for its client's result).
func TestClientCapability(t *testing.T) {
	a, err := capAgent(t, `{"name": "locate", "kind": "client", "description": "The user's location", "approvalTimeout": "5m",
		"parameters": {"type": "object", "properties": {"precise": {"type": "boolean"}}, "required": ["precise"]}}`)
	require.NoError(t, err)
	c := a.Spec.Capabilities[0]
	require.True(t, c.MayNeedApproval())
	require.Equal(t, 5*time.Minute, c.ApprovalWait())
	require.Empty(t, a.CheckCapabilityArgs("locate", json.RawMessage(`{"precise": true}`)))
	require.NotEmpty(t, a.CheckCapabilityArgs("locate", json.RawMessage(`{"precise": "yes"}`)))
}

func TestCapabilityRefusals(t *testing.T) {
	const painter = `"agent": {"name": "painter", "model": "demo/offline"}`
	cases := []struct{ capability, want string }{
		{`{"name": "x", "kind": "script"}`, `agent.capabilities[0].kind: "script" is not a capability kind; use "delegate" (another agent as a sub-task), "activity" (an activity of your worker), "mcp" (the tools of an MCP server your worker lists), "a2a" (a remote agent your worker lists) or "client" (a tool your front end runs)`},
		{`{"name": "x", "kind": "a2a"}`, `agent.capabilities[0].remoteAgent: an a2a capability names the remote agent it calls, one the worker lists in AGENT_A2A_AGENTS`},
		{`{"name": "x", "kind": "a2a", "remoteAgent": "https://evil.example/card"}`, `agent.capabilities[0].remoteAgent: "https://evil.example/card" must be 1 to 64 letters, digits, '_' or '-'`},
		{`{"name": "x", "kind": "a2a", "remoteAgent": "billing", "activity": "A"}`, `agent.capabilities[0].activity: an a2a capability does not take "activity"`},
		{`{"name": "x", "kind": "a2a", "remoteAgent": "billing", "timeout": "2d"}`, `agent.capabilities[0].timeout: "2d" is not a Go duration`},
		{`{"name": "x", "kind": "a2a", "remoteAgent": "billing", "server": "s"}`, `agent.capabilities[0]: only an mcp capability ("kind": "mcp") takes "server"`},
		{`{"name": "x", "kind": "mcp", "server": "s", "remoteAgent": "billing"}`, `agent.capabilities[0].remoteAgent: only an a2a capability ("kind": "a2a") names a remote agent`},
		{`{"name": "x", "kind": "client", "activity": "A"}`, `agent.capabilities[0]: a client capability takes "name", "description", "parameters", "condition" and "approvalTimeout"`},
		{`{"name": "x", "kind": "client", "approval": "always"}`, `agent.capabilities[0].approval: every call of a client capability waits for the client's result`},
		{`{"name": "x", "kind": "client", "parameters": {"type": "string"}}`, `agent.capabilities[0].parameters: the top of the schema must be {"type": "object", ...}`},
		{`{"name": "x", "kind": "client", "approvalTimeout": "0.5s"}`, `agent.capabilities[0].approvalTimeout: 0.5s must be at least 1s, or left out to wait for the client without limit`},
		{`{"name": "x", "kind": "client", "server": "s"}`, `only an mcp capability ("kind": "mcp") takes "server"`},
		{`{"name": "x", "kind": "mcp"}`, `agent.capabilities[0].server: an mcp capability names the MCP server it uses`},
		{`{"name": "x", "kind": "mcp", "server": "http://evil.example/mcp"}`, `must be 1 to 64 letters, digits, '_' or '-': the name of a server the worker lists in AGENT_MCP_SERVERS (not a URL)`},
		{`{"name": "x", "kind": "mcp", "server": "s", "activity": "A"}`, `agent.capabilities[0].activity: an mcp capability does not take "activity"`},
		{`{"name": "x", "kind": "mcp", "server": "s", "retry": {}}`, `agent.capabilities[0].retry: an mcp capability does not take "retry"`},
		{`{"name": "x", "kind": "mcp", "server": "s", "tools": ["echo", "echo"]}`, `agent.capabilities[0].tools[1]: "echo" is named twice`},
		{`{"name": "x", "kind": "mcp", "server": "s", "tools": [""]}`, `agent.capabilities[0].tools[0]: "" must be 1 to 128 characters`},
		{`{"name": "x", "kind": "mcp", "server": "s", "timeout": "1ms"}`, `agent.capabilities[0].timeout: 1ms must be between 1s and 24h`},
		{`{"name": "x", "kind": "activity", "activity": "A", "taskQueue": "q", "server": "s"}`, `agent.capabilities[0]: only an mcp capability ("kind": "mcp") takes "server", "tools" and "autoApprove"`},
		{`{"name": "x", "kind": "mcp", "server": "s", "autoApprove": [" echo"]}`, `agent.capabilities[0].autoApprove[0]: " echo" must be a tool name the server lists`},
		{`{"name": "x", "kind": "activity"}`, `agent.capabilities[0].activity: an activity capability needs the activity type a worker of yours registered, e.g. "activity": "IssueRefund"`},
		{`{"name": "x", "kind": "activity", "activity": " Refund"}`, `agent.capabilities[0].activity: " Refund" must not start or end with spaces`},
		{`{"name": "x", "kind": "activity", "activity": "Re\nfund"}`, `must not contain control characters`},
		{`{"name": "x", "kind": "activity", "activity": "` + strings.Repeat("é", 201) + `"}`, `must be 1 to 200 characters`},
		{`{"name": "x", "kind": "activity", "activity": "A", "taskQueue": "pay\tments"}`, `agent.capabilities[0].taskQueue: "pay\tments" must not contain control characters`},
		{`{"name": "x", "kind": "activity", "activity": "A", ` + painter + `}`, `agent.capabilities[0].agent: only a delegate capability names an agent; an activity capability names its "activity" (and optionally "taskQueue")`},
		{`{"name": "x", "kind": "activity", "activity": "A", "parameters": {"type": "array"}}`, `agent.capabilities[0].parameters: the top of the schema must be {"type": "object", ...}`},
		{`{"name": "x", "kind": "activity", "activity": "A", "parameters": {"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}}`, `agent.capabilities[0].parameters.properties.a.pattern: keyword "pattern" is outside the supported schema subset`},
		{`{"name": "x", "kind": "activity", "activity": "A", "startToCloseTimeout": "30"}`, `agent.capabilities[0].startToCloseTimeout: "30" is not a Go duration such as "30s", "5m" or "1h", or left out for 30s`},
		{`{"name": "x", "kind": "activity", "activity": "A", "startToCloseTimeout": "500ms"}`, `agent.capabilities[0].startToCloseTimeout: 500ms must be between 1s and 24h, or left out for 30s`},
		{`{"name": "x", "kind": "activity", "activity": "A", "startToCloseTimeout": "25h"}`, `must be between 1s and 24h`},
		{`{"name": "x", "kind": "activity", "activity": "A", "retry": {"initialInterval": "1ms"}}`, `agent.capabilities[0].retry.initialInterval: 1ms must be between 10ms and 1h, or left out for 1s`},
		{`{"name": "x", "kind": "activity", "activity": "A", "retry": {"backoffCoefficient": 0.5}}`, `agent.capabilities[0].retry.backoffCoefficient: 0.5 must be between 1 and 100, or left out for 2`},
		{`{"name": "x", "kind": "activity", "activity": "A", "retry": {"initialInterval": "10s", "maximumInterval": "5s"}}`, `agent.capabilities[0].retry.maximumInterval: 5s is shorter than the initial interval (10s); make it at least as long`},
		{`{"name": "x", "kind": "activity", "activity": "A", "retry": {"maximumAttempts": 101}}`, `agent.capabilities[0].retry.maximumAttempts: 101 must be between 1 and 100 (the first attempt included), or left out for 5`},
		{`{"name": "x", "kind": "activity", "activity": "A", "retry": {"maximumAttempts": -1}}`, `maximumAttempts: -1 must be between 1 and 100`},
		{`{"name": "x", "kind": "delegate", "activity": "A", ` + painter + `}`, `agent.capabilities[0].activity: only an activity capability ("kind": "activity") takes "activity"; a delegate capability's arguments are its agent's message and files`},
		{`{"name": "x", "kind": "delegate", "taskQueue": "q", ` + painter + `}`, `agent.capabilities[0].taskQueue: only an activity capability`},
		{`{"name": "x", "kind": "delegate", "parameters": {"type": "object"}, ` + painter + `}`, `agent.capabilities[0].parameters: only an activity capability`},
		{`{"name": "x", "kind": "delegate", "startToCloseTimeout": "1m", ` + painter + `}`, `agent.capabilities[0].startToCloseTimeout: only an activity capability`},
		{`{"name": "x", "kind": "delegate", "retry": {}, ` + painter + `}`, `agent.capabilities[0].retry: only an activity capability`},
		{`{"name": "x", "kind": "activity", "activity": "A", "approval": "sometimes"}`, `agent.capabilities[0].approval: "sometimes" must be "never" (the default) or "always"; to ask only for some calls, set "approvalCondition"`},
		{`{"name": "x", "kind": "activity", "activity": "A", "approval": "always", "approvalCondition": "args.a > 1"}`, `agent.capabilities[0].approvalCondition: with "approval": "always" every call waits for a decision, so the condition would never matter; drop one of the two`},
		{`{"name": "x", "kind": "activity", "activity": "A", "approvalCondition": "  "}`, `agent.capabilities[0].approvalCondition: the expression is empty`},
		{`{"name": "x", "kind": "activity", "activity": "A", "approvalTimeout": "1h"}`, `agent.capabilities[0].approvalTimeout: this capability never waits for approval; set "approval": "always" or an "approvalCondition", or drop the timeout`},
		{`{"name": "x", "kind": "activity", "activity": "A", "approval": "always", "approvalTimeout": "500ms"}`, `agent.capabilities[0].approvalTimeout: 500ms must be at least 1s, or left out to wait without limit`},
		{`{"name": "x", "kind": "delegate", "approval": "always", "approvalTimeout": "soon", ` + painter + `}`, `agent.capabilities[0].approvalTimeout: "soon" is not a Go duration`},
	}
	for _, c := range cases {
		_, err := capAgent(t, c.capability)
		require.Error(t, err, c.capability)
		require.Equal(t, ErrInvalidInput, TypeOf(err), c.capability)
		require.Contains(t, MessageOf(err), c.want, c.capability)
	}
}
