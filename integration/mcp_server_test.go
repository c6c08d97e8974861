package integration

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// bearer adds an API key to every request of an HTTP client.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// The official MCP Go SDK's client lists the stored tasks as tools through
// /mcp (their input schemas from the task's input and open variables, a
// JSON task's schema as the output schema) and calls them: a text task, a
// JSON task (its object as structuredContent), and one whose run takes
// longer than the API's run timeout, which a plain run answers 504 and the
// MCP call waits out, with progress notifications meanwhile. A key without
// the call permission is refused.
func TestMCPClientCallsStoredTasksAsTools(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		last := c.Messages[len(c.Messages)-1].Content
		switch {
		case c.JSONSchema != nil:
			return testmodel.Reply{Text: `{"reply":"billing"}`}
		case strings.Contains(last, "slow"):
			return testmodel.Reply{Text: "slowly: " + last, Delay: 5 * time.Second}
		}
		return testmodel.Reply{Text: "echo: " + last}
	})
	api := newAPI(t, h, withRunTimeout(2*time.Second), func(c *tasksapi.Config) { c.KeepAlive = time.Second })
	createSeedTask(t, api, seedTask())
	js := seedTask()
	js["name"], js["json"] = "classify", true
	js["schema"] = map[string]any{"type": "object", "properties": map[string]any{"reply": map[string]any{"type": "string"}}, "required": []any{"reply"}}
	r := api.call("POST", "/v1/tasks", devKey, js)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)

	var progress atomic.Int32
	c := mcp.NewClient(&mcp.Implementation{Name: "agenttask-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, _ *mcp.ProgressNotificationClientRequest) { progress.Add(1) }})
	ctx := ctxT(t, 2*time.Minute)
	session, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: api.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{callKey}}}, nil)
	require.NoError(t, err)
	defer session.Close()
	require.Equal(t, "2026-07-28", session.InitializeResult().ProtocolVersion, "the Go SDK speaks the stateless revision with /mcp")

	tools, err := session.ListTools(ctx, nil)
	require.NoError(t, err)
	byName := map[string]*mcp.Tool{}
	for _, tool := range tools.Tools {
		byName[tool.Name] = tool
	}
	require.Contains(t, byName, "support-reply")
	require.Equal(t, "Answers customers", byName["support-reply"].Description)
	require.JSONEq(t, `{"type":"object","additionalProperties":false,"required":["input","variables"],"properties":{
		"input":{"type":"string","description":"The message the task answers (at most 2000 bytes)"},
		"variables":{"type":"object","additionalProperties":false,"required":["customer"],"description":"The task's open variables, filled into its prompt",
			"properties":{"customer":{"type":"string"}}}}}`, jsonOf(byName["support-reply"].InputSchema))
	require.JSONEq(t, jsonOf(js["schema"]), jsonOf(byName["classify"].OutputSchema))

	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "support-reply", Arguments: map[string]any{"input": "hello", "variables": map[string]any{"customer": "Amina"}}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	require.Equal(t, "echo: hello", res.Content[0].(*mcp.TextContent).Text)
	require.Regexp(t, `^run-`, res.Meta["agenttask/runId"])

	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "classify", Arguments: map[string]any{"input": "my card", "variables": map[string]any{"customer": "Amina"}}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"reply": "billing"}, res.StructuredContent)

	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "support-reply", Arguments: map[string]any{"input": "hello"}})
	require.NoError(t, err)
	require.True(t, res.IsError, "a missing variable is the tool's error")
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "variables")

	// Longer than the API's run timeout: a plain run gives up, the MCP call
	// waits it out.
	r = api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "slow one", "variables": map[string]any{"customer": "Amina"}})
	requireProblem(t, r, http.StatusGatewayTimeout, tasksapi.CodeRunTimeout, "")
	params := &mcp.CallToolParams{Name: "support-reply", Arguments: map[string]any{"input": "slow two", "variables": map[string]any{"customer": "Amina"}}}
	params.SetProgressToken("slow-call")
	start := time.Now()
	res, err = session.CallTool(ctx, params)
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	require.Equal(t, "slowly: slow two", res.Content[0].(*mcp.TextContent).Text)
	require.Greater(t, time.Since(start), 4*time.Second)
	require.GreaterOrEqual(t, progress.Load(), int32(2), "progress while the run worked")

	// A key that may only view is refused before MCP speaks.
	viewer := mcp.NewClient(&mcp.Implementation{Name: "viewer", Version: "1"}, nil)
	vs, err := viewer.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: api.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{viewKey}}}, nil)
	if err == nil {
		_, err = vs.ListTools(ctx, nil)
	}
	require.Error(t, err)
	require.Contains(t, err.Error(), "Forbidden")
}

// The official MCP TypeScript SDK's client (@modelcontextprotocol/sdk,
// pinned by integration/mcpclient's lockfile, run by node) speaks MCP
// 2025-11-25 with a session's initialize: it lists the stored task and
// calls it, also past the API's run timeout with progress meanwhile.
func TestMCPTypeScriptClientCallsAStoredTask(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		last := c.Messages[len(c.Messages)-1].Content
		if strings.Contains(last, "slow") {
			return testmodel.Reply{Text: "slowly: " + last, Delay: 4 * time.Second}
		}
		return testmodel.Reply{Text: "echo: " + last}
	})
	api := newAPI(t, h, withRunTimeout(2*time.Second), func(c *tasksapi.Config) { c.KeepAlive = time.Second })
	createSeedTask(t, api, seedTask())

	calls := jsonOf([]any{
		map[string]any{"name": "support-reply", "arguments": map[string]any{"input": "hello", "variables": map[string]any{"customer": "Amina"}}},
		map[string]any{"name": "support-reply", "arguments": map[string]any{"input": "slow one", "variables": map[string]any{"customer": "Amina"}}},
	})
	var seen struct {
		ProtocolVersion string `json:"protocolVersion"`
		Tools           []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Results []struct {
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"isError"`
			} `json:"result"`
			Progress int    `json:"progress"`
			Error    string `json:"error"`
		} `json:"results"`
	}
	runNode(t, "mcpclient", "@modelcontextprotocol/sdk", &seen, api.url+"/mcp", callKey, calls)
	require.Equal(t, "2025-11-25", seen.ProtocolVersion)
	require.Equal(t, "support-reply", seen.Tools[0].Name)
	require.Len(t, seen.Results, 2)
	require.Empty(t, seen.Results[0].Error)
	require.Equal(t, "echo: hello", seen.Results[0].Result.Content[0].Text)
	require.Empty(t, seen.Results[1].Error)
	require.False(t, seen.Results[1].Result.IsError)
	require.Equal(t, "slowly: slow one", seen.Results[1].Result.Content[0].Text)
	require.GreaterOrEqual(t, seen.Results[1].Progress, 2, "progress while the run worked")
}
