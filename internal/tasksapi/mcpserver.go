package tasksapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/taskdef"
)

// POST /mcp serves every enabled stored task as an MCP tool
// (docs/mcp-server.md), over Streamable HTTP through the official Go SDK,
// stateless: each request is authorized by its bearer key (permission
// call) and needs no session, so MCP 2026-07-28 clients and 2025-11-25
// ones (which initialize first) are both served. A tool call is a run of
// the task: it answers with the run's answer (and, for a JSON task, the
// object as structuredContent). A call waits for its run as long as
// mcpCallTimeout, longer than the API's RunTimeout: meanwhile a client that
// asked for progress (a progressToken) gets a progress notification every
// KeepAlive, which also keeps the response stream open through proxies.

const mcpPath = "/mcp"

// mcpCallTimeout bounds how long a tool call waits for its run; the run
// goes on after it, as any run of the API does.
const mcpCallTimeout = time.Hour

// registerMCP mounts the MCP endpoint on mux.
func (s *server) registerMCP(mux *http.ServeMux) {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server { return s.mcpServer(r.Context()) },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: false})
	mux.Handle(mcpPath, s.keyed(h, PermCall))
}

// keyed refuses a request to a route outside the OpenAPI operations (MCP,
// A2A) as authorize refuses an operation's (admitKey), the key needing one
// of perms.
func (s *server) keyed(next http.Handler, perms ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, p, retry := s.admitKey(r.Header.Get("Authorization"), perms...)
		if p != nil {
			if retry != "" {
				w.Header().Set("Retry-After", retry)
			}
			writeProblem(w, p)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, id)))
	})
}

// mcpServer is the MCP server of one request (the handler is stateless,
// so every request makes one): a tool per enabled stored task, the names
// read from the store's index now (a task created a moment ago is listed)
// and each definition through the API's definition cache, as runs read
// them.
func (s *server) mcpServer(ctx context.Context) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "agenttask", Title: "Stored tasks of the agent-task runtime", Version: "1"}, nil)
	names, err := s.cfg.Store.TaskNames(ctx)
	if err != nil {
		return srv // lists no tool; a call of one is refused as unknown
	}
	for _, name := range names {
		d, err := s.storedDefinition(ctx, name)
		if err != nil || (d.Enabled != nil && !*d.Enabled) {
			continue // being created or deleted, or disabled
		}
		srv.AddTool(mcpTool(d), s.mcpCall(d))
	}
	return srv
}

// mcpTool is a stored task as an MCP tool: {"input": string, "variables":
// {the open variables}}, and the task's schema as the output schema.
func mcpTool(d taskdef.Definition) *mcp.Tool {
	props := map[string]any{}
	var required []string
	if max := derefInt(d.Input.MaxBytes); max > 0 {
		props["input"] = map[string]any{"type": "string", "description": fmt.Sprintf("The message the task answers (at most %d bytes)", max)}
		required = append(required, "input")
	}
	vars := map[string]any{}
	var open []string
	for _, name := range sortedNames(d.Variables) {
		v := d.Variables[name]
		if v.Value != nil {
			continue // the task's own value
		}
		vars[name] = map[string]any{"type": "string"}
		open = append(open, name)
	}
	if len(open) > 0 {
		props["variables"] = map[string]any{"type": "object", "properties": vars, "required": open, "additionalProperties": false,
			"description": "The task's open variables, filled into its prompt"}
		required = append(required, "variables")
	}
	desc := d.Description
	if desc == "" {
		desc = fmt.Sprintf("Run the stored task %q and get its answer.", d.Name)
	}
	t := &mcp.Tool{Name: d.Name, Description: desc,
		InputSchema: map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}}
	if d.JSON && len(d.Schema) > 0 && string(d.Schema) != "null" {
		t.OutputSchema = d.Schema
	}
	return t
}

// mcpCall runs the task d for a tool call and answers with its answer.
func (s *server) mcpCall(d taskdef.Definition) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Input     *string           `json:"input"`
			Variables map[string]string `json:"variables"`
		}
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return toolError(`the arguments must be {"input": string, "variables": {name: string}}: ` + err.Error()), nil
			}
		}
		runReq := taskdef.RunRequest{Input: in.Input, Variables: in.Variables}
		if fe := taskdef.CheckRun(d, runReq); fe != nil {
			return toolError(fe.Field + ": " + fe.Detail), nil
		}
		args, input, err := s.runInput(ctx, d, runReq)
		if err != nil {
			return toolError(problemText(err)), nil
		}
		id, err := s.runID(ctx, d.Name, "")
		if err != nil {
			return toolError(problemText(err)), nil
		}
		rctx, cancel := context.WithTimeout(ctx, mcpCallTimeout)
		defer cancel()
		if token := req.Params.GetProgressToken(); token != nil {
			go s.mcpProgress(rctx, req.Session, token, id)
		}
		h, err := s.startRun(rctx, id, false, d, args, input, false)
		var res contract.AskResult
		if err == nil {
			err = h.Get(rctx, &res)
		}
		if err != nil {
			if rctx.Err() != nil && ctx.Err() == nil {
				return toolError(fmt.Sprintf("run %s did not answer within %s; it goes on: read its answer with GET /v1/runs/%s/messages", id, mcpCallTimeout, id)), nil
			}
			return toolError(problemText(runProblem(err))), nil
		}
		a := s.answer(d, res)
		out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}},
			Meta: mcp.Meta{"agenttask/runId": id, "agenttask/model": a.Model}}
		if a.JSON != nil {
			out.StructuredContent = a.JSON
		}
		return out, nil
	}
}

// mcpProgress tells the client every KeepAlive that run id still works.
func (s *server) mcpProgress(ctx context.Context, session *mcp.ServerSession, token any, id string) {
	tick := time.NewTicker(s.cfg.KeepAlive)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		msg := fmt.Sprintf("run %s is working", id)
		var st contract.Status
		if s.query(ctx, id, &st, contract.QueryStatus) == nil {
			msg = fmt.Sprintf("run %s is %s", id, st.State)
		}
		if session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg}) != nil {
			return
		}
	}
}

// toolError is a tool result the model (or the client) reads as an error.
func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// problemText is an error as a tool result says it: a problem's code and
// detail.
func problemText(err error) string {
	if p, ok := err.(*Problem); ok {
		return p.Code + ": " + p.Detail
	}
	return err.Error()
}

// sortedNames are a task's variable names in order: a tool's schema reads
// the same from one list to the next.
func sortedNames(vars map[string]taskdef.Variable) []string {
	return slices.Sorted(maps.Keys(vars))
}
