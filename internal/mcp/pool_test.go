package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenttask/agenttask/internal/mcp"
	"github.com/agenttask/agenttask/internal/mcp/mcptest"
)

// poolFor returns a pool whose one server, "everything", is srv.
func poolFor(t *testing.T, srv *mcptest.Server) *mcp.Pool {
	t.Helper()
	p := mcp.NewPool(mcp.Servers{"everything": {Name: "everything", URL: srv.URL()}}, nil)
	t.Cleanup(func() { p.Close() })
	return p
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func call(t *testing.T, p *mcp.Pool, tool, args string) *mcp.Result {
	t.Helper()
	res, err := p.CallTool(ctxFor(t), "everything", tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("CallTool(%s): %v", tool, err)
	}
	return res
}

func TestListToolsEveryPageSorted(t *testing.T) {
	srv := mcptest.New(t, mcptest.WithPageSize(2)) // 7 tools over 4 pages
	tools, err := poolFor(t, srv).ListTools(ctxFor(t), "everything")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	want := "delete-note,echo,fail,get-resource,get-sum,get-tiny-image,needs-approval"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("tools %s, want %s", got, want)
	}
	// The annotations' hints, the MCP specification's defaults in place of
	// those a tool leaves out (none at all: destructive and open-world).
	for _, c := range []struct {
		tool int
		want mcp.Hints
	}{{0, mcp.Hints{Destructive: true}}, {1, mcp.Hints{ReadOnly: true}}, {6, mcp.Hints{Destructive: true, OpenWorld: true}}} {
		if tools[c.tool].Hints != c.want {
			t.Errorf("%s: hints %+v, want %+v", tools[c.tool].Name, tools[c.tool].Hints, c.want)
		}
	}
	echo := tools[1]
	if echo.Description != "Echoes back the input." {
		t.Errorf("echo description %q", echo.Description)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(echo.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || schema.Properties["message"] == nil || len(schema.Required) != 1 || schema.Required[0] != "message" {
		t.Errorf("echo schema %s", echo.InputSchema)
	}
}

func TestCallEachTool(t *testing.T) {
	srv := mcptest.New(t)
	p := poolFor(t, srv)

	res := call(t, p, "echo", `{"message":"hi there"}`)
	if res.IsError || len(res.Parts) != 1 || res.Parts[0].Kind != mcp.KindText || res.Parts[0].Text != "Echo: hi there" || res.Structured != nil {
		t.Errorf("echo: %+v", res)
	}

	res = call(t, p, "get-sum", `{"a":2,"b":3.5}`)
	if len(res.Parts) != 1 || res.Parts[0].Text != "The sum of 2 and 3.5 is 5.5." || string(res.Structured) != `{"sum":5.5}` {
		t.Errorf("get-sum: %+v structured %s", res, res.Structured)
	}

	res = call(t, p, "get-tiny-image", `{}`)
	if len(res.Parts) != 3 || res.Parts[0].Kind != mcp.KindText || res.Parts[2].Kind != mcp.KindText {
		t.Fatalf("get-tiny-image parts: %+v", res.Parts)
	}
	img := res.Parts[1]
	if img.Kind != mcp.KindImage || img.MimeType != "image/png" || !bytes.Equal(img.Data, mcptest.TinyPNG) || !bytes.HasPrefix(img.Data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("get-tiny-image image: kind %q mime %q %d bytes", img.Kind, img.MimeType, len(img.Data))
	}

	res = call(t, p, "get-resource", `{}`)
	want := mcp.Part{Kind: mcp.KindResource, URI: mcptest.ResourceURI, MimeType: "text/plain", Text: mcptest.ResourceText}
	if len(res.Parts) != 1 || res.Parts[0].Kind != want.Kind || res.Parts[0].URI != want.URI || res.Parts[0].MimeType != want.MimeType || res.Parts[0].Text != want.Text {
		t.Errorf("get-resource: %+v", res.Parts)
	}

	res = call(t, p, "fail", `{"message":"no such order"}`)
	if !res.IsError || len(res.Parts) != 1 || res.Parts[0].Text != "no such order" {
		t.Errorf("fail: %+v", res)
	}

	res = call(t, p, "needs-approval", `{"amount":12}`)
	if res.IsError || len(res.Parts) != 1 || res.Parts[0].Text != "Transferred 12." {
		t.Errorf("needs-approval: %+v", res)
	}

	for tool, n := range map[string]int{"echo": 1, "get-sum": 1, "get-tiny-image": 1, "get-resource": 1, "fail": 1, "needs-approval": 1} {
		if got := srv.Calls(tool); got != n {
			t.Errorf("Calls(%s) = %d, want %d", tool, got, n)
		}
	}
}

func TestCallJSONResponses(t *testing.T) {
	// A server may answer a call with application/json rather than SSE.
	srv := mcptest.New(t, mcptest.WithJSONResponse())
	res := call(t, poolFor(t, srv), "echo", `{"message":"json"}`)
	if len(res.Parts) != 1 || res.Parts[0].Text != "Echo: json" {
		t.Fatalf("echo: %+v", res)
	}
}

func TestUnknownServerAndToolArePlainErrors(t *testing.T) {
	srv := mcptest.New(t)
	p := poolFor(t, srv)
	if p.Has("nowhere") || !p.Has("everything") {
		t.Fatal("Has is wrong")
	}
	if names := p.Names(); len(names) != 1 || names[0] != "everything" {
		t.Fatalf("Names() = %q", names)
	}
	_, err := p.CallTool(ctxFor(t), "nowhere", "echo", nil)
	if !errors.Is(err, mcp.ErrUnknownServer) || mcp.IsOutage(err) || !strings.Contains(err.Error(), `"everything"`) {
		t.Errorf("unknown server: %v", err)
	}
	_, err = p.ListTools(ctxFor(t), "nowhere")
	if !errors.Is(err, mcp.ErrUnknownServer) {
		t.Errorf("unknown server listing: %v", err)
	}
	_, err = p.CallTool(ctxFor(t), "everything", "no-such-tool", json.RawMessage(`{}`))
	if err == nil || mcp.IsOutage(err) || !strings.Contains(err.Error(), "no-such-tool") {
		t.Errorf("unknown tool: %v", err)
	}
	// The session survives a protocol error: the next call works.
	if res := call(t, p, "echo", `{"message":"still here"}`); res.Parts[0].Text != "Echo: still here" {
		t.Errorf("after an unknown tool: %+v", res)
	}
	_, err = p.CallTool(ctxFor(t), "everything", "echo", json.RawMessage(`{"message":`))
	if err == nil || mcp.IsOutage(err) {
		t.Errorf("arguments not JSON: %v", err)
	}
}

func TestHeadersFromEnvReachTheServer(t *testing.T) {
	srv := mcptest.New(t)
	srv.RequireHeader("Authorization", "Bearer s3cret")
	srv.RequireHeader("X-Api-Key", "k1")
	env := map[string]string{
		mcp.EnvServers:                 "everything=" + srv.URL(),
		"AGENT_MCP_EVERYTHING_TOKEN":   "s3cret",
		"AGENT_MCP_EVERYTHING_HEADERS": `{"X-Api-Key": "k1"}`,
	}
	servers, err := mcp.ServersFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	p := mcp.NewPool(servers, nil)
	defer p.Close()
	if res := call(t, p, "echo", `{"message":"authorised"}`); res.Parts[0].Text != "Echo: authorised" {
		t.Fatalf("echo: %+v", res)
	}
	if srv.Header("X-Api-Key") != "k1" {
		t.Errorf("server saw X-Api-Key %q", srv.Header("X-Api-Key"))
	}

	// Without the token the server refuses, and that is no outage: the
	// operator must fix the credentials.
	bare := mcp.NewPool(mcp.Servers{"everything": {Name: "everything", URL: srv.URL()}}, nil)
	defer bare.Close()
	_, err = bare.CallTool(ctxFor(t), "everything", "echo", json.RawMessage(`{"message":"x"}`))
	if err == nil || mcp.IsOutage(err) || !strings.Contains(err.Error(), "AGENT_MCP_EVERYTHING_TOKEN") || !strings.Contains(err.Error(), "401") {
		t.Errorf("without credentials: %v", err)
	}
}

func TestServerDownIsAnOutageAndPasses(t *testing.T) {
	srv := mcptest.New(t)
	p := poolFor(t, srv)
	call(t, p, "echo", `{"message":"before"}`)

	srv.SetDown(true)
	_, err := p.CallTool(ctxFor(t), "everything", "echo", json.RawMessage(`{"message":"during"}`))
	var outage *mcp.OutageError
	if !errors.As(err, &outage) || outage.Server != "everything" || !strings.Contains(err.Error(), "503") {
		t.Fatalf("while down: %v", err)
	}
	_, err = p.ListTools(ctxFor(t), "everything")
	if !mcp.IsOutage(err) {
		t.Fatalf("listing while down: %v", err)
	}

	srv.SetDown(false)
	if res := call(t, p, "echo", `{"message":"after"}`); res.Parts[0].Text != "Echo: after" {
		t.Fatalf("after: %+v", res)
	}
	if got := srv.Calls("echo"); got != 2 {
		t.Errorf("Calls(echo) = %d, want 2 (the call while down never ran)", got)
	}
}

func TestDownAtFirstConnectIsAnOutage(t *testing.T) {
	srv := mcptest.New(t)
	srv.SetDown(true)
	_, err := poolFor(t, srv).ListTools(ctxFor(t), "everything")
	if !mcp.IsOutage(err) {
		t.Fatalf("connecting while down: %v", err)
	}
}

func TestClosedPortIsAnOutage(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := mcp.NewPool(mcp.Servers{"gone": {Name: "gone", URL: "http://" + addr + "/mcp"}}, nil)
	defer p.Close()
	_, err = p.CallTool(ctxFor(t), "gone", "echo", json.RawMessage(`{}`))
	if !mcp.IsOutage(err) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("closed port: %v", err)
	}
}

func TestTimeoutIsAnOutage(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	srv := mcptest.New(t, mcptest.WithTool(slowTool(block)))
	p := poolFor(t, srv)
	call(t, p, "echo", `{"message":"connect first"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := p.CallTool(ctx, "everything", "slow", json.RawMessage(`{}`))
	if !mcp.IsOutage(err) {
		t.Fatalf("timed out call: %v", err)
	}
	// The pool recovers for the next call.
	call(t, p, "echo", `{"message":"after the timeout"}`)
}

func TestCancelledCallIsNoOutage(t *testing.T) {
	srv := mcptest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := poolFor(t, srv).CallTool(ctx, "everything", "echo", json.RawMessage(`{}`))
	if err == nil || mcp.IsOutage(err) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestReconnectAfterRestart(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []mcptest.Option
	}{
		{"stateless (2026-07-28)", nil},
		{"sessions (2025-11-25)", []mcptest.Option{mcptest.WithProtocolVersions("2025-11-25")}},
		{"sessions (2025-06-18)", []mcptest.Option{mcptest.WithProtocolVersions("2025-06-18")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := mcptest.New(t, c.opts...)
			p := poolFor(t, srv)
			call(t, p, "echo", `{"message":"one"}`)
			srv.Restart()
			if res := call(t, p, "echo", `{"message":"two"}`); res.Parts[0].Text != "Echo: two" {
				t.Fatalf("after restart: %+v", res)
			}
			if got := srv.Calls("echo"); got != 2 {
				t.Errorf("Calls(echo) = %d, want 2", got)
			}
			if _, err := p.ListTools(ctxFor(t), "everything"); err != nil {
				t.Errorf("listing after restart: %v", err)
			}
		})
	}
}

func TestConcurrentCallsShareThePool(t *testing.T) {
	srv := mcptest.New(t)
	p := poolFor(t, srv)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := p.CallTool(ctxFor(t), "everything", "get-sum", json.RawMessage(`{"a":`+string(rune('0'+i%10))+`,"b":1}`))
			if err != nil {
				errs <- err
				return
			}
			if res.Structured == nil {
				errs <- errors.New("no structured content")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := srv.Calls("get-sum"); got != 16 {
		t.Errorf("Calls(get-sum) = %d, want 16", got)
	}
}

func TestClosedPoolRefuses(t *testing.T) {
	srv := mcptest.New(t)
	p := poolFor(t, srv)
	call(t, p, "echo", `{"message":"x"}`)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.CallTool(ctxFor(t), "everything", "echo", nil); err == nil || mcp.IsOutage(err) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestHeadersDoNotFollowARedirectElsewhere(t *testing.T) {
	var leaked atomic.Value
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization") + r.Header.Get("X-Api-Key"))
		http.Error(w, "not here", http.StatusNotFound)
	}))
	defer elsewhere.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	header := http.Header{}
	header.Set("Authorization", "Bearer s3cret")
	header.Set("X-Api-Key", "k1")
	p := mcp.NewPool(mcp.Servers{"r": {Name: "r", URL: redirector.URL + "/mcp", Header: header}}, nil)
	defer p.Close()
	if _, err := p.ListTools(ctxFor(t), "r"); err == nil {
		t.Fatal("listing through a redirect to a 404 worked")
	}
	if got, _ := leaked.Load().(string); got != "" {
		t.Fatalf("the redirect target received %q", got)
	}
	if leaked.Load() == nil {
		t.Fatal("the redirect was not followed; the test proves nothing")
	}
}

func TestStreamCutMidCallIsAnOutageAtOnce(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	srv := mcptest.New(t, mcptest.WithTool(slowTool(block)))
	p := poolFor(t, srv)
	call(t, p, "echo", `{"message":"connect first"}`)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := p.CallTool(ctxFor(t), "everything", "slow", json.RawMessage(`{}`))
		done <- err
	}()
	for srv.Calls("slow") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	srv.Restart() // cuts the call's stream
	select {
	case err := <-done:
		if !mcp.IsOutage(err) {
			t.Fatalf("cut call: %v", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("the cut call took %v to fail", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the cut call is still waiting")
	}
	call(t, p, "echo", `{"message":"after the cut"}`)
	if got := srv.Calls("slow"); got != 1 {
		t.Errorf("Calls(slow) = %d, want 1: a call that may have run is not sent again", got)
	}
}
